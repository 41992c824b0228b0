// normlab's thread pool: a caller publishes a job (a team or parts) with a new job number;
// workers wait for the number to change (spin, then yield, then sleep on a futex through
// std::atomic::wait), take the job and run their share. A job is shared (shared_ptr) with the
// workers that took it, so a worker that wakes after its caller returned still finds valid
// counters: it then finds no part left and never touches the caller's function.
#include "base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace normlab::base {

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waits until v != old: about 20-50 us of spinning (a training step's next kernel is usually that
// close), then yields for a while, then sleeps until notified.
// (int, not a wider type: std::atomic<int>::wait is a futex on the value itself.)
// With `spinning`, the count is lowered when the spin ends (it was raised by the caller).
void wait_change(const std::atomic<int>& v, int old, std::atomic<int>* spinning = nullptr) {
  bool changed = false;
  for (int i = 0; i < 2000 && !(changed = v.load(std::memory_order_acquire) != old); ++i) cpu_relax();
  if (spinning) spinning->fetch_sub(1, std::memory_order_relaxed);
  if (changed) return;
  for (int i = 0; i < 50; ++i) {
    if (v.load(std::memory_order_acquire) != old) return;
    std::this_thread::yield();
  }
  while (v.load(std::memory_order_acquire) == old) v.wait(old, std::memory_order_acquire);
}

thread_local bool in_job = false;  // nested jobs run on the caller alone

// One call's work: a team (fn run by threads members) or parts (part(i), i < parts).
struct Job {
  const std::function<void(int, int)>* team = nullptr;
  int threads = 1;              // team size
  std::atomic<int> remaining{0};  // team members on workers still running

  const std::function<void(int64_t)>* part = nullptr;
  int64_t parts = 0;
  int helpers = 0;                   // workers allowed to join (threads - 1)
  std::atomic<int> joined{0};        // workers that joined
  int64_t in_order = 0;              // parts [0, in_order) are claimed from the front by all
  // The unclaimed parts [front, back), front in the low 32 bits, back in the high 32 (a job has
  // fewer than 2^32 parts: parallel_parts_on_pool runs more as several jobs).
  std::atomic<uint64_t> ends{0};
  std::atomic<int64_t> finished{0};  // parts done

  // Claims the next part into i (the front one, or for a worker the back one once the in-order
  // parts are all claimed); false when none is left.
  bool claim(bool worker, int64_t& i) {
    uint64_t e = ends.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = e & 0xffffffffu, back = e >> 32;
      if (front >= back) return false;
      const bool from_back = worker && static_cast<int64_t>(front) >= in_order;
      const uint64_t next = from_back ? (back - 1) << 32 | front : back << 32 | (front + 1);
      if (ends.compare_exchange_weak(e, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        i = static_cast<int64_t>(from_back ? back - 1 : front);
        return true;
      }
    }
  }

  void work_parts(bool worker) {
    for (int64_t i; claim(worker, i);) {
      (*part)(i);
      finished.fetch_add(1, std::memory_order_acq_rel);
    }
  }
};

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(job_mu_);
      stop_ = true;
      number_.fetch_add(1, std::memory_order_acq_rel);
    }
    number_.notify_all();
    for (auto& w : workers_) w.join();
  }

  void run_team(int threads, const std::function<void(int, int)>& fn) {
    std::lock_guard<std::mutex> one_job(run_mu_);
    auto job = std::make_shared<Job>();
    job->team = &fn;
    job->threads = threads;
    job->remaining.store(threads - 1, std::memory_order_relaxed);
    publish(job, threads - 1);
    in_job = true;
    fn(0, threads);
    in_job = false;
    for (int r; (r = job->remaining.load(std::memory_order_acquire)) != 0;) wait_change(job->remaining, r);
  }

  void run_parts(int threads, int64_t parts, const std::function<void(int64_t)>& part, int64_t in_order) {
    std::lock_guard<std::mutex> one_job(run_mu_);
    auto job = std::make_shared<Job>();
    job->part = &part;
    job->parts = parts;
    job->in_order = in_order;
    job->ends.store(static_cast<uint64_t>(parts) << 32, std::memory_order_relaxed);
    job->helpers = threads - 1;
    publish(job, threads - 1);
    in_job = true;
    job->work_parts(false);
    in_job = false;
    // Only parts that running threads claimed are left: a short wait.
    while (job->finished.load(std::memory_order_acquire) < parts) std::this_thread::yield();
  }

  // Workers spinning for the next job right now (they take a job within a microsecond; a
  // sleeping one takes a wake-up, tens of microseconds on a virtual machine).
  int spinning() const { return spinning_.load(std::memory_order_relaxed); }

 private:
  // Starts workers up to `workers`, then makes job the current one under a new number.
  void publish(const std::shared_ptr<Job>& job, int workers) {
    {
      std::lock_guard<std::mutex> lock(job_mu_);
      while (static_cast<int>(workers_.size()) < workers) {
        const int id = static_cast<int>(workers_.size()) + 1;
        // The worker starts from the current number: it may start running only after the
        // increment below, and must still take this job.
        const int seen = number_.load(std::memory_order_relaxed);
        workers_.emplace_back([this, id, seen] { loop(id, seen); });
      }
      job_ = job;
      number_.fetch_add(1, std::memory_order_acq_rel);  // with job_, under the lock: always a pair
    }
    number_.notify_all();
  }

  void loop(int id, int seen) {
    in_job = true;
    for (;;) {
      spinning_.fetch_add(1, std::memory_order_relaxed);
      wait_change(number_, seen, &spinning_);
      std::shared_ptr<Job> job;
      {
        std::lock_guard<std::mutex> lock(job_mu_);
        if (stop_) return;
        seen = number_.load(std::memory_order_acquire);
        job = job_;
      }
      if (job->team) {
        // A team member: its caller waits for it (a team job stays current until all ran).
        if (id < job->threads) {
          (*job->team)(id, job->threads);
          if (job->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) job->remaining.notify_one();
        }
      } else if (job->joined.fetch_add(1, std::memory_order_relaxed) < job->helpers) {
        job->work_parts(true);
      }
    }
  }

  std::mutex run_mu_;  // one job at a time
  std::mutex job_mu_;  // job_, number_'s increments, workers_, stop_
  std::vector<std::thread> workers_;
  std::atomic<int> number_{0};  // the current job's number (wraps around; only compared)
  std::atomic<int> spinning_{0};  // workers in the spinning phase of their wait
  std::shared_ptr<Job> job_;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_run(int threads, const std::function<void(int t, int nt)>& fn) {
  if (threads <= 1 || in_job) return fn(0, 1);
  pool().run_team(threads, fn);
}

int spinning_workers() { return pool().spinning(); }

void parallel_parts_on_pool(int threads, int64_t parts, const std::function<void(int64_t)>& part,
                            int64_t in_order) {
  if (threads <= 1 || parts <= 1 || in_job) {
    for (int64_t i = 0; i < parts; ++i) part(i);
    return;
  }
  // Up to 2^32 - 1 parts fit the job's two 32-bit ends; more (no caller has that many) are run
  // in chunks of that many.
  constexpr int64_t kMaxParts = 0xffffffff;
  for (int64_t first = 0; first < parts; first += kMaxParts) {
    const int64_t n = std::min(kMaxParts, parts - first);
    if (first == 0 && n == parts) {
      pool().run_parts(threads, parts, part, in_order);
    } else {
      const std::function<void(int64_t)> chunk = [&](int64_t i) { part(first + i); };
      pool().run_parts(threads, n, chunk, std::max<int64_t>(0, in_order - first));
    }
  }
}

}  // namespace normlab::base
