// Threads for the normalization kernels: independent parts run on up to num_threads() OpenMP
// threads. Which thread runs a part never changes a result: the kernels give every part its own
// outputs and combine any partial sums afterwards in part order (see norm-inl.h).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "autograd/parallel.h"

namespace normlab::nn::kernels {

// Work below this many elements runs on the calling thread: starting a team costs a few
// microseconds, about what a norm kernel spends on 64K elements.
constexpr int64_t kParallelElems = int64_t(1) << 16;

// The threads to use for `elems` elements of work split into `parts` parts (1 when small).
inline int norm_threads(int64_t elems, int64_t parts) {
  if (elems < kParallelElems || parts < 2) return 1;
  return static_cast<int>(std::min<int64_t>(autograd::num_threads(), parts));
}

// Runs part(i) for every i in [0, parts) on `threads` threads; parts are claimed one at a time
// (a busy core then simply takes fewer). Threads wait for each other with an atomic counter that
// yields the core, not in OpenMP's spinning barrier, so the region's closing barrier is reached
// together (the GEMM does the same: GOMP's spin waits stall when another process shares the cores).
template <class Part>
void parallel_parts(int threads, int64_t parts, const Part& part) {
#ifdef _OPENMP
  if (threads > 1 && parts > 1) {
    std::atomic<int64_t> next{0};
    std::atomic<int> done{0};
#pragma omp parallel num_threads(threads)
    {
      for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < parts;) part(i);
      const int team = omp_get_num_threads();
      done.fetch_add(1, std::memory_order_acq_rel);
      while (done.load(std::memory_order_acquire) < team) std::this_thread::yield();
    }
    return;
  }
#endif
  (void)threads;
  for (int64_t i = 0; i < parts; ++i) part(i);
}

}  // namespace normlab::nn::kernels
