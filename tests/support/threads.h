// Test helpers: pin the thread count and the grains (autograd/grain.h) for one test, restoring both;
// wake the pool's workers; check that results have the same bits on 1, 2 and 3 threads.
#pragma once
#include <boost/test/unit_test.hpp>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autograd/grain.h"
#include "autograd/parallel.h"
#include "base/thread_pool.h"

namespace normlab::test {

// While alive, every kernel call splits its work over all num_threads() threads, however small it
// is (every grain 0), so that a test of thread-count independence on a small shape really runs it
// split. The destructor restores the thread count and the grains the test started with.
struct ThreadsGuard {
  int saved_threads = autograd::num_threads();
  autograd::Grains saved_grains = autograd::grains();
  ThreadsGuard() { autograd::grains() = autograd::Grains{}; }
  ~ThreadsGuard() {
    autograd::set_num_threads(saved_threads);
    autograd::grains() = saved_grains;
  }
  ThreadsGuard(const ThreadsGuard&) = delete;
  ThreadsGuard& operator=(const ThreadsGuard&) = delete;
};

// Wakes the pool's workers for a threads-thread job and returns once they spin for the next one (or
// after a while if they do not): a kernel that splits only when a worker is awake (the optimizer's
// update, optim/kernels/sgd.cc) then splits if called at once.
inline void wake_workers(int threads) {
  base::parallel_run(threads, [](int, int) {});
  for (int i = 0; i < 100000 && base::spinning_workers() < threads - 1; ++i) std::this_thread::yield();
}

// Computes results() on 1, 2 and 3 threads (set_num_threads) and checks that every count gives
// the bits of the first; context names the case in a failure. Inside a ThreadsGuard, so that the
// work really splits.
inline void expect_same_bits_on_1_2_and_3_threads(const std::function<std::vector<std::vector<double>>()>& results,
                                                  const std::string& context) {
  std::vector<std::vector<double>> first;
  for (int threads : {1, 2, 3}) {
    autograd::set_num_threads(threads);
    const std::vector<std::vector<double>> r = results();
    if (first.empty()) first = r;
    BOOST_TEST_CONTEXT(context << ", " << threads << " threads") {
      BOOST_TEST(r.size() == first.size());
      for (size_t i = 0; i < r.size() && i < first.size(); ++i) BOOST_TEST(r[i] == first[i]);
    }
  }
}

}  // namespace normlab::test
