// GEMM benchmarks: float32 GFLOP/s for square sizes 32..2048, 512x1024 @ 1024x1024, the three
// products of each Linear layer of the MLP 784-256-256-10 at batch 128, and Linear(784, 256)'s
// forward product from batch 1 to 1024.
#include <string>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "bench/bench.h"

namespace normlab::bench {

namespace k = autograd::kernels;

namespace {

// Times C = op(A) op(B) for one shape; reports GFLOP/s (2 M N K flops per product).
void run_gemm(benchmark::State& state, k::GemmShape s) {
  const auto a = random_vec<float>(s.m * s.k, 1), b = random_vec<float>(s.k * s.n, 2);
  AlignedVec<float> c(static_cast<size_t>(s.m * s.n));
  for (auto _ : state) {
    k::gemm(s, a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void add(const std::string& name, k::GemmShape s) {
  benchmark::RegisterBenchmark(name.c_str(), run_gemm, s)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

k::GemmShape shape(int64_t m, int64_t n, int64_t kk, bool ta = false, bool tb = false) {
  k::GemmShape s;
  s.m = m, s.n = n, s.k = kk, s.trans_a = ta, s.trans_b = tb;
  return s;
}

}  // namespace

void register_gemm() {
  // Names: "matmul MxK @ KxN" (A (M, K) times B (K, N)).
  for (int64_t n : {32, 64, 128, 256, 512, 1024, 2048}) {
    const std::string d = std::to_string(n);
    add("matmul " + d + "x" + d + " @ " + d + "x" + d, shape(n, n, n));
  }
  add("matmul 512x1024 @ 1024x1024", shape(512, 1024, 1024));
  // Linear(in, out) at batch B: forward y = x W^T (B, in)(out, in)^T; dX = dY W (B, out)(out, in);
  // dW = dY^T X (B, out)^T (B, in).
  const int64_t batch = 128;
  for (auto [in, out] : std::vector<std::pair<int64_t, int64_t>>{{784, 256}, {256, 256}, {256, 10}}) {
    const std::string l = "linear " + std::to_string(in) + "->" + std::to_string(out) + " b128 ";
    add(l + "forward x W^T", shape(batch, out, in, false, true));
    add(l + "dX = dY W", shape(batch, in, out));
    add(l + "dW = dY^T X", shape(out, in, batch, true, false));
  }
  // Scaling with the batch: the forward product of Linear(784, 256) from batch 1 to 1024.
  for (int64_t b : {1, 4, 16, 64, 256, 1024})
    add("linear 784->256 b" + std::to_string(b) + " forward x W^T", shape(b, 256, 784, false, true));
}

}  // namespace normlab::bench
