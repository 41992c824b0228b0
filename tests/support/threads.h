// Test helper: pins the thread count and the grains (autograd/grain.h) for one test, restoring both.
#pragma once
#include "autograd/grain.h"
#include "autograd/parallel.h"

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

}  // namespace normlab::test
