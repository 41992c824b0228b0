// The measurement behind the kernels' grains (autograd/grain.h): one kernel of each family over a
// range of sizes, with every grain set to 0 so that each call runs on all the threads of
// --threads. Run once with --threads=1 and once with --threads=2 and put the two side by side
// (bench/table.py): the size from which 2 threads are faster than 1 is where the family's grain
// is set (one grain per thread). Rows "grain <family> <work>"; the data are reused call after
// call, as a training step's next kernel reads what the one before it wrote.
#include <string>
#include <vector>

#include "autograd/grain.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/norm.h"
#include "autograd/kernels/reduce.h"
#include "bench/bench.h"
#include "optim/kernels/sgd.h"

namespace normlab::bench {

namespace k = autograd::kernels;

namespace {

// Every grain 0 for the life of a row: every size runs on all threads.
struct NoGrains {
  autograd::Grains saved = autograd::grains();
  NoGrains() { autograd::grains() = autograd::Grains{}; }
  ~NoGrains() { autograd::grains() = saved; }
};

void gemm_row(benchmark::State& state, int64_t m, int64_t n, int64_t kk, bool tb) {
  NoGrains none;
  k::GemmShape s;
  s.m = m, s.n = n, s.k = kk, s.trans_b = tb;
  const auto a = random_vec<float>(m * kk, 1), b = random_vec<float>(kk * n, 2);
  AlignedVec<float> c(static_cast<size_t>(m * n));
  for (auto _ : state) {
    k::gemm(s, a.data(), b.data(), c.data());
    benchmark::ClobberMemory();
  }
}

void relu_row(benchmark::State& state, int64_t n) {
  NoGrains none;
  const auto x = random_vec<float>(n, 1);
  AlignedVec<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    k::unary(k::UnaryOp::Relu, n, x.data(), y.data());
    benchmark::ClobberMemory();
  }
}

void sum_row(benchmark::State& state, int64_t n) {  // sum over the rows of (n / 256, 256)
  NoGrains none;
  const auto x = random_vec<float>(n, 1);
  AlignedVec<float> out(256);
  for (auto _ : state) {
    k::reduce(k::ReduceOp::Sum, 1, n / 256, 256, x.data(), out.data());
    benchmark::ClobberMemory();
  }
}

void layer_norm_row(benchmark::State& state, int64_t n) {  // rows of 256
  NoGrains none;
  const int64_t rows = n / 256;
  const auto x = random_vec<float>(n, 1), g = random_vec<float>(256, 2), b = random_vec<float>(256, 3);
  AlignedVec<float> y(static_cast<size_t>(n)), mean(rows), lo(rows), rstd(rows);
  for (auto _ : state) {
    k::layer_norm_forward(rows, 256, x.data(), g.data(), b.data(), 1e-5, y.data(), mean.data(), lo.data(),
                          rstd.data());
    benchmark::ClobberMemory();
  }
}

void batch_norm_row(benchmark::State& state, int64_t n) {  // (n / 256, 256) batch statistics
  NoGrains none;
  const int64_t rows = n / 256;
  const auto x = random_vec<float>(n, 1);
  AlignedVec<float> mean(256), lo(256), var(256);
  for (auto _ : state) {
    k::batch_norm_stats(rows, 256, 1, x.data(), mean.data(), lo.data(), var.data());
    benchmark::ClobberMemory();
  }
}

void sgd_row(benchmark::State& state, int64_t n) {  // momentum 0.9
  NoGrains none;
  auto theta = random_vec<float>(n, 1), buf = random_vec<float>(n, 3);
  const auto grad = random_vec<float>(n, 2);
  optim::kernels::SGDStep s;
  s.lr = 1e-6, s.momentum = 0.9;
  for (auto _ : state) {
    optim::kernels::sgd_step(s, n, theta.data(), grad.data(), buf.data());
    benchmark::ClobberMemory();
  }
}

template <class F, class... Args>
void add(const std::string& name, F f, Args... args) {
  benchmark::RegisterBenchmark(name.c_str(), f, args...)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_grain() {
  // Square products m^3 and the LSTM's gate product (b, 128) x (128, 512) at batch b.
  for (int64_t m : {24, 32, 40, 48, 64, 80, 96, 128})
    add("grain gemm " + std::to_string(m * m * m) + " (" + std::to_string(m) + "^3)", gemm_row, m, m, m, false);
  for (int64_t b : {2, 4, 8, 16, 32, 64})
    add("grain gemm " + std::to_string(b * 128 * 512) + " (" + std::to_string(b) + "x128 @ 128x512)", gemm_row, b,
        int64_t{512}, int64_t{128}, false);
  for (int64_t b : {1, 2, 4, 8, 16})
    add("grain gemm " + std::to_string(b * 784 * 256) + " (" + std::to_string(b) + "x784 @ (256x784)^T)", gemm_row, b,
        int64_t{256}, int64_t{784}, true);
  for (int e = 12; e <= 21; ++e) {
    const int64_t n = int64_t(1) << e, kb = n * 4 / 1024;
    const std::string at = " " + std::to_string(n) + " (2^" + std::to_string(e) + ", " + std::to_string(kb) + " KiB)";
    add("grain elementwise" + at, relu_row, n);
    add("grain reduce" + at, sum_row, n);
    add("grain norm layer" + at, layer_norm_row, n);
    add("grain norm batch" + at, batch_norm_row, n);
    add("grain optimizer" + at, sgd_row, n);
  }
}

}  // namespace normlab::bench
