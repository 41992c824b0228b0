// STREAM-like memory bandwidth in plain C++ (no Highway, no normlab kernel): copy a = b and
// triad a = b + s c over float arrays of 2^25 elements (128 MiB each, 4x the 32 MiB L3, on huge
// pages), on num_threads() OpenMP threads (as STREAM itself; only this benchmark uses OpenMP): the
// ceiling memory-bound kernels (norms) are compared to.
// Bytes counted as STREAM does: copy 8 B per element, triad 12 B (no write-allocate traffic).
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

#include <omp.h>

#include "autograd/parallel.h"
#include "bench/bench.h"

namespace normlab::bench {

namespace {

constexpr ptrdiff_t kN = ptrdiff_t(1) << 25;

// This thread's contiguous share of the kN elements (a static partition, as STREAM's).
struct Range {
  ptrdiff_t begin, end;
};
Range my_range() {
  const ptrdiff_t t = omp_get_thread_num(), nt = omp_get_num_threads();
  return {kN * t / nt, kN * (t + 1) / nt};
}

// The STREAM loops, on restrict pointers so that the compiler vectorizes them (omp simd: GCC's
// -O2 does not vectorize loops that need a remainder loop).
void copy(float* __restrict a, const float* __restrict b, ptrdiff_t n) {
#pragma omp simd
  for (ptrdiff_t i = 0; i < n; ++i) a[i] = b[i];
}
void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float s, ptrdiff_t n) {
#pragma omp simd
  for (ptrdiff_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

// A 2 MiB-aligned array on transparent huge pages where the kernel allows it (madvise mode):
// the hardware prefetchers then run across 4 KiB page boundaries, worth 10-20% of streaming
// bandwidth here; STREAM measures what the machine can do.
struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
std::unique_ptr<float[], FreeDeleter> huge_array() {
  constexpr size_t kHuge = size_t(1) << 21, bytes = kN * sizeof(float);
  auto* p = static_cast<float*>(std::aligned_alloc(kHuge, bytes));
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return std::unique_ptr<float[], FreeDeleter>(p);
}

struct Arrays {
  std::unique_ptr<float[], FreeDeleter> a = huge_array(), b = huge_array(), c = huge_array();
  explicit Arrays(int threads) {
    // First touch by the same static partition as the timed loops (pages near their thread).
    float *a_ = a.get(), *b_ = b.get(), *c_ = c.get();
#pragma omp parallel num_threads(threads)
    {
      const Range r = my_range();
      for (ptrdiff_t i = r.begin; i < r.end; ++i) a_[i] = 1.0f, b_[i] = 2.0f, c_[i] = 0.5f;
    }
  }
};

void stream_copy(benchmark::State& state) {
  const int threads = autograd::num_threads();
  Arrays x(threads);
  float* a = x.a.get();
  const float* b = x.b.get();
  for (auto _ : state) {
#pragma omp parallel num_threads(threads)
    {
      const Range r = my_range();
      copy(a + r.begin, b + r.begin, r.end - r.begin);
    }
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
#pragma omp parallel num_threads(threads)
    {
      const Range r = my_range();
      triad(a + r.begin, b + r.begin, c + r.begin, s, r.end - r.begin);
    }
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
