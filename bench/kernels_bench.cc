// Elementwise and reduction kernel benchmarks on a 4096x1024 float32 tensor (16 MiB per operand),
// reported in GB/s of data moved (inputs read + outputs written), to compare with STREAM.
#include <string>
#include <vector>

#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/reduce.h"
#include "bench/bench.h"

namespace normlab::bench {

namespace k = autograd::kernels;

namespace {

constexpr int64_t kRows = 4096, kCols = 1024, kNumel = kRows * kCols;

// Sets the bytes counter: `arrays` float arrays of kNumel elements moved per iteration.
void count_bytes(benchmark::State& state, double arrays) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * arrays * kNumel * sizeof(float)));
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

void unary_f32(benchmark::State& state, k::UnaryOp op) {  // y = f(x)
  const auto x = random_vec<float>(kNumel, 1);
  AlignedVec<float> y(kNumel);
  for (auto _ : state) {
    k::unary(op, kNumel, x.data(), y.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 2);
}

void axpy_f32(benchmark::State& state) {  // y += a x
  const auto x = random_vec<float>(kNumel, 1);
  auto y = random_vec<float>(kNumel, 2);
  for (auto _ : state) {
    k::axpy(kNumel, 1e-3, x.data(), y.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 3);
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
  add("relu" + shape, unary_f32, k::UnaryOp::Relu);
  add("exp" + shape, unary_f32, k::UnaryOp::Exp);
  add("tanh" + shape, unary_f32, k::UnaryOp::Tanh);
  add("gelu" + shape, unary_f32, k::UnaryOp::Gelu);
  add("axpy" + shape, axpy_f32);
  add("sum dim0" + shape, sum_f32, 0);
  add("sum dim1" + shape, sum_f32, 1);
}

}  // namespace normlab::bench
