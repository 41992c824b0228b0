// normlab's one thread pool, for every kernel that runs on several threads (autograd's GEMM,
// convolutions, reductions and norms, optim's updates; each call says how many threads, from the
// work it has: autograd/grain.h): persistent workers that spin only briefly, then sleep, between
// jobs, so they do not take the core from the thread doing the work in between (GOMP's idle threads
// spin for milliseconds, and on a shared or busy 2-core machine a 2-thread training step then took
// 10-30x longer than on 1 thread). Two kinds of job share the workers:
//   parallel_parts: independent parts claimed one at a time by the caller and the workers that
//                   wake in time; the caller never waits for a worker that has not started. Every
//                   kernel uses these (the GEMM's packed panels too: their parts come first, in
//                   order, and a row block waits only for panels that were claimed, so never for
//                   a sleeper). The caller claims from the front and the workers from the back, so
//                   that on 2 threads one op after another over the same rows gives each core
//                   about the same half of them: what one op wrote, the next reads from the same
//                   core's cache rather than the other's;
//   parallel_run:   a team of nt threads running fn(t, nt) at once, for work that needs all its
//                   threads at the same time (the bench's peak probe). Its start-up waits for
//                   every member, so a sleeping worker costs the caller its whole wake-up.
// Which thread runs what never changes a result: every caller gives each team member or part its
// own outputs and combines partial sums afterwards in a fixed order.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>

namespace normlab::base {

// Runs fn(t, nt) for t = 0 .. nt-1 at once, t = 0 on the calling thread and the others on pool
// workers, and returns when all have returned; nt = threads, or 1 when called from inside a job
// (nested jobs run on the caller alone). threads >= 1. Callers on several threads are served one
// job at a time. fn must not throw.
void parallel_run(int threads, const std::function<void(int t, int nt)>& fn);

// How many pool workers are spinning for a job right now (0 when all sleep, or none was started):
// for work small enough that waking a sleeping worker would cost more than it saves. Only a hint
// for speed: which thread runs a part must never change a result.
int spinning_workers();

// parallel_parts with more than one thread and part (a std::function of a reference_wrapper does
// not allocate).
void parallel_parts_on_pool(int threads, int64_t parts, const std::function<void(int64_t)>& part, int64_t in_order);

// Runs part(i) for every i in [0, parts) on the calling thread and up to threads - 1 workers;
// parts are claimed one at a time. The caller waits only for parts that were claimed: a worker
// that the OS has not scheduled yet (a busy machine) claims nothing and is not waited for, so a
// call never takes longer than the caller doing all the parts itself plus the last claimed part.
// The caller claims parts 0, 1, 2, ... and the workers parts - 1, parts - 2, ..., until the two
// meet; but the first `in_order` parts are claimed from the front by every thread, before any
// other: a later part may wait for them (every one is claimed by a running thread by then).
// Which thread runs a part must not change a result. Inside a job, the parts run on the caller
// alone. part must not throw.
template <class Part>
void parallel_parts(int threads, int64_t parts, const Part& part, int64_t in_order = 0) {
  // One thread: a plain loop, without wrapping `part` in a std::function, which would allocate
  // for a lambda capturing more than two pointers.
  if (threads <= 1 || parts <= 1) {
    for (int64_t i = 0; i < parts; ++i) part(i);
    return;
  }
  parallel_parts_on_pool(threads, parts, std::function<void(int64_t)>(std::cref(part)), in_order);
}

// Runs fn(begin, end) over [0, n) as parts_per_thread ranges per thread, each a whole number of
// 64-element blocks (no two threads write one cache line), claimed as in parallel_parts.
template <class Fn>
void parallel_blocks(int threads, int64_t n, int64_t parts_per_thread, const Fn& fn) {
  const int64_t blocks = (n + 63) / 64, parts = threads <= 1 ? 1 : std::min<int64_t>(parts_per_thread * threads, blocks);
  if (parts <= 1) return fn(int64_t{0}, n);
  parallel_parts(threads, parts, [&](int64_t q) {
    const int64_t b = blocks * q / parts * 64, e = std::min(n, blocks * (q + 1) / parts * 64);
    if (b < e) fn(b, e);
  });
}

}  // namespace normlab::base
