// The start-up cost of a parallel region on normlab's thread pool (base/thread_pool.h): a team job
// whose members do nothing, or a job of 2 parts per thread that do nothing, timed from the call to
// its return, with the workers still spinning from
// the previous job (back-to-back calls, as a training step's kernels come) and with the workers
// asleep (a 2 ms pause before each call, longer than their spin and yield). Below a few times this
// cost, a kernel's work is faster on one thread; the thread-count rules of the kernels are stated
// against it. At 1 thread the call runs the function inline (the floor).
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "autograd/parallel.h"
#include "base/thread_pool.h"
#include "bench/bench.h"

namespace normlab::bench {

namespace {

// Times job() from the call to its return, after a first untimed call (the workers exist before
// the first timed one), back to back or after a 2 ms pause (the workers asleep).
template <class Job>
void time_start_up(benchmark::State& state, bool asleep, const Job& job) {
  job();
  for (auto _ : state) {
    if (asleep) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto start = std::chrono::steady_clock::now();
    job();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

// A team job: returns when every member has run.
void pool_start_up(benchmark::State& state, bool asleep) {
  const int threads = autograd::num_threads();
  std::atomic<int> sink{0};
  const auto noop = [&sink](int t, int) {
    if (t < 0) sink.fetch_add(1, std::memory_order_relaxed);  // never: keeps the call
  };
  time_start_up(state, asleep, [&] { base::parallel_run(threads, noop); });
  benchmark::DoNotOptimize(sink.load());
}

// A parts job (what the kernels run): the caller does not wait for a worker that has not woken,
// so with the workers asleep this times what the call costs the caller (the wake-up request).
void pool_parts_start_up(benchmark::State& state, bool asleep) {
  const int threads = autograd::num_threads();
  std::atomic<int> sink{0};
  const auto noop = [&sink](int64_t i) {
    if (i < 0) sink.fetch_add(1, std::memory_order_relaxed);  // never: keeps the call
  };
  time_start_up(state, asleep, [&] { base::parallel_parts(threads, 2 * threads, noop); });
  benchmark::DoNotOptimize(sink.load());
}

}  // namespace

void register_pool() {
  struct Row { const char* name; void (*fn)(benchmark::State&, bool); };
  for (const Row& r : {Row{"pool start-up", pool_start_up}, Row{"pool start-up parts", pool_parts_start_up}}) {
    const auto fn = r.fn;
    benchmark::RegisterBenchmark((std::string(r.name) + " workers spinning").c_str(),
                                 [fn](benchmark::State& state) { fn(state, false); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string(r.name) + " workers asleep").c_str(),
                                 [fn](benchmark::State& state) { fn(state, true); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond)
        ->Iterations(200);
  }
}

}  // namespace normlab::bench
