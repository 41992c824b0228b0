// The machine's FMA peak, the ceiling of every GEMM-bound row: 12 independent chains of fused
// multiply-adds v = v * a + b per thread on float32 vectors of the widest target Highway dispatches
// to (the target the kernels run on; --target pins it), on normlab's thread pool with
// autograd::num_threads() threads, each its own chains. 12 chains cover a 4-cycle FMA latency on
// 2 FMA pipes (8 in flight) with room to spare; nothing is loaded or stored in the loop. A row's
// FLOPs: 2 per lane per FMA. bench/table.py prints this rate in the table's header and gives every
// GFLOP/s row its share of it at the same thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak_bench.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// iters rounds of the 12 chains from `seed`; returns the sum of their lanes, so that the compiler
// keeps every chain. a slightly below 1 and a tiny b keep the values finite and normal.
float FmaChains(int64_t iters, float seed) {
  const hn::ScalableTag<float> d;
  const auto a = hn::Set(d, 0.99999994f), b = hn::Set(d, 1e-7f);
  auto v0 = hn::Set(d, seed), v1 = hn::Add(v0, b), v2 = hn::Add(v1, b), v3 = hn::Add(v2, b);
  auto v4 = hn::Add(v3, b), v5 = hn::Add(v4, b), v6 = hn::Add(v5, b), v7 = hn::Add(v6, b);
  auto v8 = hn::Add(v7, b), v9 = hn::Add(v8, b), v10 = hn::Add(v9, b), v11 = hn::Add(v10, b);
  for (int64_t i = 0; i < iters; ++i) {
    v0 = hn::MulAdd(v0, a, b), v1 = hn::MulAdd(v1, a, b), v2 = hn::MulAdd(v2, a, b), v3 = hn::MulAdd(v3, a, b);
    v4 = hn::MulAdd(v4, a, b), v5 = hn::MulAdd(v5, a, b), v6 = hn::MulAdd(v6, a, b), v7 = hn::MulAdd(v7, a, b);
    v8 = hn::MulAdd(v8, a, b), v9 = hn::MulAdd(v9, a, b), v10 = hn::MulAdd(v10, a, b), v11 = hn::MulAdd(v11, a, b);
  }
  const auto s = hn::Add(hn::Add(hn::Add(hn::Add(v0, v1), hn::Add(v2, v3)), hn::Add(hn::Add(v4, v5), hn::Add(v6, v7))),
                         hn::Add(hn::Add(v8, v9), hn::Add(v10, v11)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

int64_t FloatLanes() { return static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>())); }

}  // namespace normlab::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <vector>

#include "autograd/parallel.h"
#include "base/thread_pool.h"
#include "bench/bench.h"

namespace normlab::bench {

HWY_EXPORT(FmaChains);
HWY_EXPORT(FloatLanes);

namespace {

constexpr int64_t kChains = 12, kIters = int64_t{1} << 20;

void peak_fma(benchmark::State& state) {
  const int threads = autograd::num_threads();
  std::vector<float> sink(static_cast<size_t>(threads));
  for (auto _ : state) {
    base::parallel_run(threads, [&](int t, int) { sink[t] = HWY_DYNAMIC_DISPATCH(FmaChains)(kIters, 1.0f + t); });
    benchmark::DoNotOptimize(sink.data());
  }
  const double flops = 2.0 * static_cast<double>(HWY_DYNAMIC_DISPATCH(FloatLanes)()) * kChains * kIters * threads;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

void register_peak() {
  benchmark::RegisterBenchmark("peak fma f32", peak_fma)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace normlab::bench
#endif  // HWY_ONCE
