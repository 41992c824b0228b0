// Running a list of training runs with one progress bar: one after another, or on several threads
// at once, one run per thread.
#include "experiments/run/runs.h"

#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "autograd/parallel.h"
#include "dist/dist.h"
#include "experiments/records/gather_runs.h"
#include "experiments/records/records.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/progress.h"

namespace normlab::experiments {

namespace {

// Every rank's finished runs on every rank, each in its place (gather_runs.h). Only a group's
// first rank sends (the others of a data-parallel run hold the same results).
void gather_runs(const std::vector<CheckedRun>& configs, std::vector<std::optional<RunResult>>& finished, bool send) {
  gather_runs_of_ranks(
      finished, send, [](size_t, const RunResult& r) { return records_json(r); },
      [&configs](size_t i, const nlohmann::json& j) { return stored_run(j, configs[i].config()); });
}

// Sets the kernels' thread count for the lifetime of the guard, then restores it.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(autograd::num_threads()) { autograd::set_num_threads(n); }
  ~ThreadCount() { autograd::set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

// The runs of one call to run_all: claimed in order by one or more worker threads, each trained
// (or taken from the earlier records), its progress and outcome reported under one lock.
class RunQueue {
 public:
  RunQueue(const std::vector<CheckedRun>& configs, const Splits& data, bool quiet, const RunLabel& label,
           const RunOutcome& outcome, const std::vector<nlohmann::json>& previous, size_t first, size_t stride,
           RunJournal* journal)
      : configs_(configs), data_(data), label_(label), outcome_(outcome), previous_(previous), journal_(journal),
        progress_(steps_of(configs, data, first, stride), quiet), finished_(configs.size()),
        steps_done_(configs.size(), 0), next_(first), stride_(stride) {}

  // Claims and trains runs in order until none is left, Ctrl-C was pressed or a run failed.
  void work() {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (next_ >= configs_.size() || error_ || interrupted()) return;
        i = next_;
        next_ += stride_;
      }
      try {
        train(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  // After the workers joined: rethrows a run's error, else closes the progress bar.
  void finish() {
    if (error_) std::rethrow_exception(error_);
    progress_.finish();
  }

  std::vector<std::optional<RunResult>>& finished() { return finished_; }
  size_t reused() const { return reused_; }
  double elapsed_seconds() const { return progress_.elapsed_seconds(); }

 private:
  // The steps of the runs first, first + stride, ...: those this process trains.
  static int64_t steps_of(const std::vector<CheckedRun>& configs, const Splits& data, size_t first, size_t stride) {
    int64_t total = 0;
    for (size_t i = first; i < configs.size(); i += stride) total += steps_per_run(configs[i].config(), data);
    return total;
  }

  void report_steps(size_t i, int64_t done, const std::string& name) {  // with mu_ held
    steps_done_[i] = done;
    int64_t sum = 0;
    for (int64_t s : steps_done_) sum += s;
    progress_.update(sum, name);
  }

  void train(size_t i) {
    const TrainConfig& c = configs_[i].config();
    const std::string name = label_(c);
    std::optional<RunResult> kept = i < previous_.size() ? stored_run(previous_[i], c) : std::nullopt;
    RunResult r = kept ? std::move(*kept) : train_run(configs_[i], data_, [&](int64_t done, int64_t) {
      std::lock_guard<std::mutex> lock(mu_);
      report_steps(i, done, name);
    });
    r.model.reset();  // only the records are kept (freed on the thread that made it)
    std::lock_guard<std::mutex> lock(mu_);
    report_steps(i, steps_per_run(c, data_), name);
    if (!r.interrupted) {
      if (journal_) journal_->append(i, r);  // durable before it is reported
      progress_.line(name + ": " + outcome_(r) + (kept ? " (from the earlier records)" : ""));
      reused_ += kept ? 1 : 0;
    }
    finished_[i] = std::move(r);
  }

  const std::vector<CheckedRun>& configs_;
  const Splits& data_;
  const RunLabel& label_;
  const RunOutcome& outcome_;
  const std::vector<nlohmann::json>& previous_;
  RunJournal* journal_;
  Progress progress_;
  std::mutex mu_;  // guards everything below that the workers share
  std::vector<std::optional<RunResult>> finished_;
  std::vector<int64_t> steps_done_;
  size_t next_, stride_, reused_ = 0;
  std::exception_ptr error_;
};

}  // namespace

Runs run_all(const std::vector<CheckedRun>& configs, const Splits& data, bool quiet, const RunLabel& label,
             const RunOutcome& outcome, const std::vector<nlohmann::json>& previous, int ranks_per_run,
             RunJournal* journal) {
  const size_t n = configs.size();
  if (ranks_per_run < 1 || dist::world_size() % ranks_per_run != 0)
    throw Error("runs over " + std::to_string(ranks_per_run) + " processes each need a job of a multiple of " +
                std::to_string(ranks_per_run) + " processes, this one has " + std::to_string(dist::world_size()));
  // In an mpirun job (compare, sweep, study over several processes) each group of ranks_per_run
  // ranks trains every G-th run, from its number on; the results are gathered afterwards (below).
  const size_t ranks = static_cast<size_t>(dist::world_size() / ranks_per_run),
               me = static_cast<size_t>(dist::rank() / ranks_per_run);
  const bool whole_job = dist::world_size() > 1;
  std::optional<dist::Group> group;  // this run's ranks (a collective: every rank makes one)
  if (whole_job) group.emplace(static_cast<int>(me));
  const bool sender = dist::rank() == 0;  // the group's first rank
  RunQueue queue(configs, data, quiet, label, outcome, previous, me, ranks, sender ? journal : nullptr);
  // With several threads, runs train side by side, one thread each: their results do not depend
  // on the thread count, and at the studies' sizes two single-thread runs at once finish sooner
  // than two 2-thread runs in turn (a batch-2 MLP step gains nothing from a second thread).
  // Data-parallel runs: one at a time (MPI is called from the main thread only).
  const int workers =
      ranks_per_run > 1 ? 1 : static_cast<int>(std::min<size_t>(static_cast<size_t>(autograd::num_threads()), n));
  if (workers <= 1) {
    queue.work();
  } else {
    ThreadCount one(1);
    std::vector<std::thread> helpers;
    for (int t = 1; t < workers; ++t) helpers.emplace_back([&queue] { queue.work(); });
    queue.work();
    for (auto& h : helpers) h.join();
  }
  queue.finish();
  group.reset();
  std::vector<std::optional<RunResult>>& finished = queue.finished();
  size_t reused = queue.reused();
  if (whole_job) {
    gather_runs(configs, finished, sender);
    double taken = sender ? static_cast<double>(reused) : 0;  // every group's runs from the earlier records
    dist::allreduce_sum(&taken, 1);
    reused = static_cast<size_t>(taken);
  }
  Runs runs;
  runs.total = n;
  runs.reused = reused;
  for (size_t i = 0; i < n && finished[i] && !finished[i]->interrupted; ++i) runs.results.push_back(std::move(*finished[i]));
  runs.wall_seconds = queue.elapsed_seconds();
  return runs;
}

}  // namespace normlab::experiments
