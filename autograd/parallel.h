// The number of threads normlab's kernels may use (base/thread_pool.h), set once by the user
// (`--threads`).
#pragma once

namespace normlab::autograd {

/// Sets the thread count for the kernels that run in parallel (GEMM, reductions, norms); n >= 1,
/// else normlab::Error. It is a ceiling: each call uses fewer when its work is too small to pay for
/// more (autograd/grain.h).
/// Results do not depend on it: every parallel kernel computes each output with the same
/// sequence of operations whatever the thread count.
void set_num_threads(int n);
/// The current thread count; by default all cores (std::thread::hardware_concurrency(), at least 1).
int num_threads();

}  // namespace normlab::autograd
