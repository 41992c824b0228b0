// A small persistent thread pool for the kernels' parallel regions (the GEMM's): its idle workers
// spin only briefly, then sleep, so they do not take the core from the thread doing the work in
// between (GOMP's idle threads spin for milliseconds, and on a shared or busy 2-core machine a
// 2-thread training step then took 10-30x longer than on 1 thread).
#pragma once
#include <functional>

namespace normlab::autograd::kernels {

// Runs fn(t, nt) for t = 0 .. nt-1 at once, t = 0 on the calling thread and the others on pool
// workers, and returns when all have returned; nt = threads, or 1 when called from inside a
// region (nested regions run on the caller alone). threads >= 1. Callers on several threads are
// served one region at a time. fn must not throw.
void parallel_run(int threads, const std::function<void(int t, int nt)>& fn);

}  // namespace normlab::autograd::kernels
