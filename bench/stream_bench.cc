// STREAM-like memory bandwidth in plain C++ (no Highway, no normlab kernel): copy a = b and
// triad a = b + s c over float arrays of 2^25 elements (128 MiB each, 4x the 32 MiB L3, on huge
// pages), on num_threads() OpenMP threads (as STREAM itself; only this benchmark uses OpenMP): the
// ceiling memory-bound kernels (norms) are compared to.
// Bytes counted as STREAM does: copy 8 B per element, triad 12 B (no write-allocate traffic). On
// x86-64 the loops store with non-temporal (streaming) stores, so that these are the bytes that
// actually move: a plain store first reads its line into the cache (write-allocate), 12 and 16 B
// per element. glibc's memcpy (PyTorch's copy_) does the same for arrays larger than the cache.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include <omp.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

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

#if defined(__SSE2__)
// The STREAM loops with non-temporal stores (SSE2: every x86-64): a scalar head up to a 16-byte
// aligned destination, then 4 floats per _mm_stream_ps (the write-combining buffers merge them into
// whole 64-byte lines, so wider vectors would not move more bytes), a scalar tail, and an sfence
// that orders the streamed stores before the threads join.
template <class Body4, class Body1>
void stream_loop(const float* a, ptrdiff_t n, Body4 body4, Body1 body1) {
  ptrdiff_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(a + i) % 16 != 0; ++i) body1(i);
  for (; i + 16 <= n; i += 16) body4(i), body4(i + 4), body4(i + 8), body4(i + 12);
  for (; i + 4 <= n; i += 4) body4(i);
  for (; i < n; ++i) body1(i);
  _mm_sfence();
}
void copy(float* __restrict a, const float* __restrict b, ptrdiff_t n) {
  stream_loop(a, n, [=](ptrdiff_t i) { _mm_stream_ps(a + i, _mm_loadu_ps(b + i)); },
              [=](ptrdiff_t i) { a[i] = b[i]; });
}
void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float s, ptrdiff_t n) {
  const __m128 vs = _mm_set1_ps(s);
  stream_loop(a, n, [=](ptrdiff_t i) { _mm_stream_ps(a + i, _mm_add_ps(_mm_loadu_ps(b + i), _mm_mul_ps(vs, _mm_loadu_ps(c + i)))); },
              [=](ptrdiff_t i) { a[i] = b[i] + s * c[i]; });
}
#else
// Elsewhere, plain stores, on restrict pointers so that the compiler vectorizes them (omp simd:
// GCC's -O2 does not vectorize loops that need a remainder loop).
void copy(float* __restrict a, const float* __restrict b, ptrdiff_t n) {
#pragma omp simd
  for (ptrdiff_t i = 0; i < n; ++i) a[i] = b[i];
}
void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float s, ptrdiff_t n) {
#pragma omp simd
  for (ptrdiff_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}
#endif

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
