// How many threads a normalization kernel uses: the parts of a norm run on autograd's one thread
// pool (base/thread_pool.h) when the work has at least two grains of elements (autograd/grain.h).
// Which thread runs a part never changes a result: the kernels give every part its own outputs and
// combine any partial sums afterwards in part order (see norm-inl.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "autograd/grain.h"
#include "base/thread_pool.h"

namespace normlab::autograd::kernels {

// The threads to use for `work` units split into `parts` parts, with the family's grain.
inline int grain_threads(int64_t work, int64_t parts, double grain) {
  if (parts < 2) return 1;
  return static_cast<int>(std::min<int64_t>(autograd::threads_for(static_cast<double>(work), grain), parts));
}

// The threads for `elems` elements of a norm split into `parts` parts (1 when small).
inline int norm_threads(int64_t elems, int64_t parts) { return grain_threads(elems, parts, autograd::grains().norm); }

// The threads for `elems` elements of BatchNorm's per-channel sums split into `parts` parts.
inline int batch_norm_threads(int64_t elems, int64_t parts) {
  return grain_threads(elems, parts, autograd::grains().batch_norm);
}

}  // namespace normlab::autograd::kernels
