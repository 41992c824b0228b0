// STREAM-like memory bandwidth in plain C++ (no Highway, no normlab kernel): copy a = b and
// triad a = b + s c over float arrays of 2^25 elements (128 MiB each, 4x the 32 MiB L3), on
// num_threads() OpenMP threads. The ceiling that memory-bound kernels (norms) are compared to.
// Bytes counted as STREAM does: copy 8 B per element, triad 12 B (no write-allocate traffic).
#include <cstddef>
#include <memory>

#include "autograd/parallel.h"
#include "bench/bench.h"

namespace normlab::bench {

namespace {

constexpr ptrdiff_t kN = ptrdiff_t(1) << 25;

struct Arrays {
  std::unique_ptr<float[]> a{new float[kN]}, b{new float[kN]}, c{new float[kN]};
  explicit Arrays(int threads) {
    // First touch by the same static partition as the timed loops (pages near their thread).
    float *a_ = a.get(), *b_ = b.get(), *c_ = c.get();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (ptrdiff_t i = 0; i < kN; ++i) a_[i] = 1.0f, b_[i] = 2.0f, c_[i] = 0.5f;
  }
};

void stream_copy(benchmark::State& state) {
  const int threads = autograd::num_threads();
  Arrays x(threads);
  float* a = x.a.get();
  const float* b = x.b.get();
  for (auto _ : state) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (ptrdiff_t i = 0; i < kN; ++i) a[i] = b[i];
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kN * 2 * static_cast<int64_t>(sizeof(float)));
}

void stream_triad(benchmark::State& state) {
  const int threads = autograd::num_threads();
  Arrays x(threads);
  float* a = x.a.get();
  const float *b = x.b.get(), *c = x.c.get();
  const float s = 3.0f;
  for (auto _ : state) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (ptrdiff_t i = 0; i < kN; ++i) a[i] = b[i] + s * c[i];
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kN * 3 * static_cast<int64_t>(sizeof(float)));
}

}  // namespace

void register_stream() {
  benchmark::RegisterBenchmark("stream copy 2^25", stream_copy)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("stream triad 2^25", stream_triad)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace normlab::bench
