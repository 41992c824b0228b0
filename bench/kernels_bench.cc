// Elementwise and reduction kernel benchmarks on a 4096x1024 float32 tensor (16 MiB per operand),
// reported in GB/s of data moved (inputs read + outputs written), to compare with STREAM; relu and
// axpy also on 64x1024 (256 KiB per operand: in a 1 MiB L2), 1024x1024 (4 MiB: in L3) and
// 16384x1024 (64 MiB: in neither), where plain or streaming stores decide the row.
#include <string>
#include <vector>

#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/reduce.h"
#include "bench/bench.h"

namespace normlab::bench {

namespace k = autograd::kernels;

namespace {

constexpr int64_t kRows = 4096, kCols = 1024, kNumel = kRows * kCols;

// Sets the bytes counter: `arrays` float arrays of `numel` elements moved per iteration.
void count_bytes(benchmark::State& state, double arrays, int64_t numel = kNumel) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * arrays * numel * sizeof(float)));
}

void add_f32(benchmark::State& state) {  // z = x + y
  const auto x = random_vec<float>(kNumel, 1), y = random_vec<float>(kNumel, 2);
  AlignedVec<float> z(kNumel);
  k::BroadcastPlan p;
  p.rank = 1, p.size[0] = kNumel, p.sa[0] = 1, p.sb[0] = 1;
  for (auto _ : state) {
    k::binary(k::BinaryOp::Add, p, x.data(), y.data(), z.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 3);
}

void unary_f32(benchmark::State& state, k::UnaryOp op, int64_t rows) {  // y = f(x), (rows, kCols)
  const int64_t n = rows * kCols;
  const auto x = random_vec<float>(n, 1);
  AlignedVec<float> y(n);
  for (auto _ : state) {
    k::unary(op, n, x.data(), y.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 2, n);
}

void axpy_f32(benchmark::State& state, int64_t rows) {  // y += a x, (rows, kCols)
  const int64_t n = rows * kCols;
  const auto x = random_vec<float>(n, 1);
  auto y = random_vec<float>(n, 2);
  for (auto _ : state) {
    k::axpy(n, 1e-3, x.data(), y.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 3, n);
}

void sum_f32(benchmark::State& state, int dim) {  // sum over rows (dim 0) or within rows (dim 1)
  const auto x = random_vec<float>(kNumel, 1);
  AlignedVec<float> out(dim == 0 ? kCols : kRows);
  for (auto _ : state) {
    if (dim == 0) k::reduce(k::ReduceOp::Sum, 1, kRows, kCols, x.data(), out.data());
    else k::reduce(k::ReduceOp::Sum, kRows, kCols, 1, x.data(), out.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 1);
}

template <class F, class... Args>
void add(const std::string& name, F f, Args... args) {
  benchmark::RegisterBenchmark(name.c_str(), f, args...)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_kernels() {
  const std::string shape = " 4096x1024";
  add("add" + shape, add_f32);
  add("relu" + shape, unary_f32, k::UnaryOp::Relu, kRows);
  add("exp" + shape, unary_f32, k::UnaryOp::Exp, kRows);
  add("tanh" + shape, unary_f32, k::UnaryOp::Tanh, kRows);
  add("gelu" + shape, unary_f32, k::UnaryOp::Gelu, kRows);
  add("axpy" + shape, axpy_f32, kRows);
  add("sum dim0" + shape, sum_f32, 0);
  add("sum dim1" + shape, sum_f32, 1);
  for (int64_t rows : {int64_t(64), int64_t(1024), int64_t(16384)}) {  // the cache regimes
    const std::string at = " " + std::to_string(rows) + "x" + std::to_string(kCols);
    add("relu" + at, unary_f32, k::UnaryOp::Relu, rows);
    add("axpy" + at, axpy_f32, rows);
  }
}

}  // namespace normlab::bench
