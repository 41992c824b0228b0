// Threads for the normalization kernels: independent parts run on the calling thread and up to
// num_threads() - 1 helper threads. Which thread runs a part never changes a result: the kernels
// give every part its own outputs and combine any partial sums afterwards in part order (see
// norm-inl.h).
#pragma once
#include <cstdint>
#include <functional>

#include "autograd/parallel.h"

namespace normlab::nn::kernels {

// Work below this many elements runs on the calling thread: waking a helper costs a few
// microseconds, about what a norm kernel spends on 64K elements.
constexpr int64_t kParallelElems = int64_t(1) << 16;

// The threads to use for `elems` elements of work split into `parts` parts (1 when small).
int norm_threads(int64_t elems, int64_t parts);

// parallel_parts with more than one thread and part (a std::function of a reference_wrapper does
// not allocate).
void parallel_parts_on_pool(int threads, int64_t parts, const std::function<void(int64_t)>& part);

// Runs part(i) for every i in [0, parts) on the calling thread and up to threads - 1 helpers; parts
// are claimed one at a time. The caller waits only for parts that were claimed: a helper that the
// OS has not scheduled yet (a busy machine) claims nothing and is not waited for, so a call never
// takes longer than the caller doing all the parts itself plus the last claimed part.
template <class Part>
void parallel_parts(int threads, int64_t parts, const Part& part) {
  // One thread (every call under kParallelElems): a plain loop, without wrapping `part` in a
  // std::function, which would allocate for a lambda capturing more than two pointers.
  if (threads <= 1 || parts <= 1) {
    for (int64_t i = 0; i < parts; ++i) part(i);
    return;
  }
  parallel_parts_on_pool(threads, parts, std::function<void(int64_t)>(std::cref(part)));
}

}  // namespace normlab::nn::kernels
