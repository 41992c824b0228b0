// The normalization kernels' helper threads: persistent threads that sleep until a call publishes
// a job, claim its parts with an atomic counter, and never make the caller wait for them unless
// they claimed a part.
#include "nn/kernels/norm_parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace normlab::nn::kernels {

namespace {

// One call's parts. Shared (shared_ptr) with the helpers that picked it up, so a helper that wakes
// after the call returned still finds valid counters; it then claims an index >= parts and never
// touches `part`, which lives on the caller's stack.
struct Job {
  const std::function<void(int64_t)>* part = nullptr;
  int64_t parts = 0;
  int helpers = 0;                    // helpers allowed to join (threads - 1)
  std::atomic<int> joined{0};         // helpers that joined
  std::atomic<int64_t> next{0};       // next unclaimed part
  std::atomic<int64_t> finished{0};   // parts done
};

class Pool {
 public:
  // Runs the job's parts here and on the helpers; returns when every part is done.
  void run(const std::shared_ptr<Job>& job) {
    ensure_helpers(job->helpers);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = job;
      ++generation_;
    }
    wake_.notify_all();
    work(*job);
    while (job->finished.load(std::memory_order_acquire) < job->parts) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mutex_);
    if (job_ == job) job_.reset();
  }

 private:
  static void work(Job& job) {
    for (int64_t i; (i = job.next.fetch_add(1, std::memory_order_relaxed)) < job.parts;) {
      (*job.part)(i);
      job.finished.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  void ensure_helpers(int n) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (static_cast<int>(helpers_.size()) < n) {
      helpers_.emplace_back([this] { helper_loop(); });
      helpers_.back().detach();  // the pool lives until the process ends
    }
  }

  void helper_loop() {
    uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        job = job_;
      }
      if (!job || job->joined.fetch_add(1, std::memory_order_relaxed) >= job->helpers) continue;
      work(*job);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  uint64_t generation_ = 0;
  std::shared_ptr<Job> job_;
  std::vector<std::thread> helpers_;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: detached helpers may still wait on it at exit
  return *p;
}

}  // namespace

int norm_threads(int64_t elems, int64_t parts) {
  if (elems < kParallelElems || parts < 2) return 1;
  return static_cast<int>(std::min<int64_t>(autograd::num_threads(), parts));
}

void parallel_parts_on_pool(int threads, int64_t parts, const std::function<void(int64_t)>& part) {
  auto job = std::make_shared<Job>();
  job->part = &part;
  job->parts = parts;
  job->helpers = threads - 1;
  pool().run(job);
}

}  // namespace normlab::nn::kernels
