// The kernels' thread count: one process-wide setting, read once per kernel call.
#include "autograd/parallel.h"

#include <atomic>
#include <string>
#include <thread>

#include "base/error.h"


namespace normlab::autograd {

namespace {
int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();  // 0 when unknown
  return n == 0 ? 1 : static_cast<int>(n);
}
std::atomic<int>& thread_count() {
  static std::atomic<int> n{default_threads()};
  return n;
}
}  // namespace

void set_num_threads(int n) {
  if (n < 1) throw Error("threads must be at least 1, got " + std::to_string(n));
  thread_count().store(n, std::memory_order_relaxed);
}

int num_threads() { return thread_count().load(std::memory_order_relaxed); }

}  // namespace normlab::autograd
