// How many threads a normalization kernel uses: the parts of a norm run on autograd's one thread
// pool (base/thread_pool.h) when the work is large enough to pay for waking a worker. Which
// thread runs a part never changes a result: the kernels give every part its own outputs and
// combine any partial sums afterwards in part order (see norm-inl.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "autograd/parallel.h"
#include "base/thread_pool.h"

namespace normlab::autograd::kernels {


// Work below this many elements runs on the calling thread: waking a worker costs a few
// microseconds, about what a norm kernel spends on 64K elements.
constexpr int64_t kParallelElems = int64_t(1) << 16;

// The threads to use for `elems` elements of work split into `parts` parts (1 when small).
inline int norm_threads(int64_t elems, int64_t parts) {
  if (elems < kParallelElems || parts < 2) return 1;
  return static_cast<int>(std::min<int64_t>(autograd::num_threads(), parts));
}

}  // namespace normlab::autograd::kernels
