// The kernels' thread pool: workers wait for a new region number (spin, then yield, then sleep
// on a futex through std::atomic::wait), run their part, and count down.
#include "autograd/kernels/pool.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace normlab::autograd::kernels {

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waits until v != old: about 20-50 us of spinning (a training step's next GEMM is usually that
// close), then yields for a while, then sleeps until notified.
void wait_change(const std::atomic<int>& v, int old) {
  for (int i = 0; i < 2000; ++i) {
    if (v.load(std::memory_order_acquire) != old) return;
    cpu_relax();
  }
  for (int i = 0; i < 50; ++i) {
    if (v.load(std::memory_order_acquire) != old) return;
    std::this_thread::yield();
  }
  while (v.load(std::memory_order_acquire) == old) v.wait(old, std::memory_order_acquire);
}

thread_local bool in_region = false;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_acq_rel);
      generation_.notify_all();
    }
    for (auto& w : workers_) w.join();
  }

  void run(int threads, const std::function<void(int, int)>& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    while (static_cast<int>(workers_.size()) < threads - 1) {
      const int id = static_cast<int>(workers_.size()) + 1;
      // The worker starts from the current region number: it may start running only after
      // the increment below, and must still take part in this region.
      const int seen = generation_.load(std::memory_order_relaxed);
      workers_.emplace_back([this, id, seen] { loop(id, seen); });
    }
    job_ = &fn;
    threads_ = threads;
    // Every worker counts down, needed or not: no worker can then still be in this region (or
    // read its job) when the next one starts.
    remaining_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes job_, threads_, remaining_
    generation_.notify_all();
    in_region = true;
    fn(0, threads);
    in_region = false;
    for (int r; (r = remaining_.load(std::memory_order_acquire)) != 0;) wait_change(remaining_, r);
  }

 private:
  void loop(int id, int seen) {
    in_region = true;
    for (;;) {
      wait_change(generation_, seen);
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      if (id < threads_) (*job_)(id, threads_);  // else not needed in this region
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
    }
  }

  std::mutex mu_;  // one region at a time
  std::vector<std::thread> workers_;
  std::atomic<int> generation_{0}, remaining_{0};
  const std::function<void(int, int)>* job_ = nullptr;
  int threads_ = 1;
  bool stop_ = false;
};

}  // namespace

void parallel_run(int threads, const std::function<void(int t, int nt)>& fn) {
  if (threads <= 1 || in_region) return fn(0, 1);
  static Pool pool;
  pool.run(threads, fn);
}

}  // namespace normlab::autograd::kernels
