// The run queue: a study's list of runs trained one after another or side by side on the kernels'
// threads, split over the ranks of an mpirun job, with one progress bar, a line per finished run,
// a journal of the finished runs and the runs an earlier command left taken instead of trained.
// One queue for every family: a family (the classification runs of run/runs.h, the language
// models' of studies/lm_runs.h) says how one of its runs is labelled, trained, stored and read back.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/dist.h"
#include "experiments/records/gather_runs.h"
#include "experiments/records/records.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/progress.h"

namespace normlab::experiments {

// The runs of a queue that finished, in order.
template <class Result>
struct RunSet {
  std::vector<Result> results;  // the finished runs, in order, up to the first that did not finish
  size_t total = 0;             // runs planned
  size_t reused = 0;            // runs taken from the records of an earlier, interrupted command
  double wall_seconds = 0;
  // Ctrl-C stopped the command: results holds the first results.size() runs only.
  bool interrupted() const { return results.size() < total; }
};

// What the queue asks of a family's list of runs, run i for i < size():
//   steps(i)        its planned steps (the progress bar's share)
//   label(i)        its name on the progress bar and its line: "compare: norm layer, seed 0"
//   train(i, on_step)  trains it (without keeping its model), calling on_step(steps done)
//   stored(i, json) the run that records hold when they were made with run i's settings, else nullopt
//   records(i, r)   the records of a finished run (the journal's and the other ranks' copy)
//   outcome(r)      what its line says when it ends: "test accuracy 0.8412, 12.3 s"
// A result has `bool interrupted` (Ctrl-C stopped it before its last step).
template <class F>
concept RunFamily = requires(const F& f, size_t i, const typename F::Result& r, const nlohmann::json& j,
                             const std::function<void(int64_t)>& on_step) {
  { f.size() } -> std::convertible_to<size_t>;
  { f.steps(i) } -> std::convertible_to<int64_t>;
  { f.label(i) } -> std::convertible_to<std::string>;
  { f.train(i, on_step) } -> std::same_as<typename F::Result>;
  { f.stored(i, j) } -> std::same_as<std::optional<typename F::Result>>;
  { f.records(i, r) } -> std::same_as<nlohmann::json>;
  { f.outcome(r) } -> std::convertible_to<std::string>;
  { r.interrupted } -> std::convertible_to<bool>;
};

struct QueueOptions {
  bool quiet = false;                                  // no progress bar, no lines
  const std::vector<nlohmann::json>* previous = nullptr;  // an earlier command's runs, by position
  // Runs data-parallel over this many ranks each (1: each run on one process; see run_queue).
  int ranks_per_run = 1;
  // Where this process journals the runs it finishes (nullptr: nowhere). Only the first rank of
  // each group of ranks_per_run ranks journals (the others hold the same results).
  RunJournal* journal = nullptr;
};

// How an mpirun job shares a queue: W / R groups of R consecutive ranks (R = ranks_per_run), group
// g trains runs g, g + W/R, ...; one process alone trains them all. Throws normlab::Error when the
// job's size is not a multiple of ranks_per_run. A collective in an mpirun job (every rank makes
// its group).
struct JobShare {
  explicit JobShare(int ranks_per_run);
  size_t first = 0, stride = 1;
  bool sender = true;  // this process is its group's first rank: it journals and sends its runs
  std::optional<dist::Group> group;  // this group's ranks, while the runs train (an mpirun job only)
};

// How many runs train side by side: with T kernel threads, T runs at once, one thread each (their
// results do not depend on the thread count, and at the studies' sizes two single-thread runs at
// once finish sooner than two 2-thread runs in turn); data-parallel runs one at a time (MPI is
// called from the main thread only).
int queue_workers(int ranks_per_run, size_t runs);

// Sets the kernels' thread count for the lifetime of the guard, then restores it.
class ThreadCount {
 public:
  explicit ThreadCount(int n);
  ~ThreadCount();
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

namespace detail {

// The runs of one call to run_queue: claimed in order by one or more worker threads, each trained
// (or taken from the earlier records), its progress and outcome reported under one lock.
template <RunFamily F>
class Queue {
 public:
  using Result = typename F::Result;
  Queue(const F& family, const QueueOptions& o, size_t first, size_t stride, RunJournal* journal)
      : family_(family), previous_(o.previous), journal_(journal), progress_(steps_of(family, first, stride), o.quiet),
        finished_(family.size()), steps_done_(family.size(), 0), next_(first), stride_(stride) {}

  // Claims and trains runs in order until none is left, Ctrl-C was pressed or a run failed.
  void work() {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (next_ >= finished_.size() || error_ || interrupted()) return;
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

  std::vector<std::optional<Result>>& finished() { return finished_; }
  size_t reused() const { return reused_; }
  double elapsed_seconds() const { return progress_.elapsed_seconds(); }

 private:
  // The steps of the runs first, first + stride, ...: those this process trains.
  static int64_t steps_of(const F& family, size_t first, size_t stride) {
    int64_t total = 0;
    for (size_t i = first; i < family.size(); i += stride) total += family.steps(i);
    return total;
  }

  void report_steps(size_t i, int64_t done, const std::string& name) {  // with mu_ held
    steps_done_[i] = done;
    int64_t sum = 0;
    for (int64_t s : steps_done_) sum += s;
    progress_.update(sum, name);
  }

  void train(size_t i) {
    const std::string name = family_.label(i);
    std::optional<Result> kept =
        previous_ && i < previous_->size() ? family_.stored(i, (*previous_)[i]) : std::optional<Result>();
    Result r = kept ? std::move(*kept) : family_.train(i, [&](int64_t done) {
      std::lock_guard<std::mutex> lock(mu_);
      report_steps(i, done, name);
    });
    std::lock_guard<std::mutex> lock(mu_);
    report_steps(i, family_.steps(i), name);
    if (!r.interrupted) {
      if (journal_) journal_->append(i, family_.records(i, r));  // durable before it is reported
      progress_.line(name + ": " + family_.outcome(r) + (kept ? " (from the earlier records)" : ""));
      reused_ += kept ? 1 : 0;
    }
    finished_[i] = std::move(r);
  }

  const F& family_;
  const std::vector<nlohmann::json>* previous_;
  RunJournal* journal_;
  Progress progress_;
  std::mutex mu_;  // guards everything below that the workers share
  std::vector<std::optional<Result>> finished_;
  std::vector<int64_t> steps_done_;
  size_t next_, stride_, reused_ = 0;
  std::exception_ptr error_;
};

}  // namespace detail

// Trains every run of the family, taking a run from o.previous (the records of an earlier command
// with the same settings, records.h) instead of training it when that holds it. Runs train side by
// side (queue_workers), claimed in order: the results are the same bits as one after another. The
// progress bar shows label(i); when a run ends, the line "label: outcome" is printed (in the order
// the runs end). Nothing is printed when quiet. Ctrl-C stops after the current step: the
// unfinished runs are dropped, and so are the runs after the first unfinished one; no other
// starts. A run that throws stops the others from starting and the error is rethrown. In an mpirun
// job of W processes, the ranks share the runs (JobShare) and every rank then holds every run's
// results (their records exchanged, gather_runs.h: the same files as one process writes). Every run
// this process finishes (trained or taken from previous) is appended to o.journal the moment it
// finishes: a command killed later keeps it for --resume.
template <RunFamily F>
RunSet<typename F::Result> run_queue(const F& family, const QueueOptions& o) {
  using Result = typename F::Result;
  JobShare share(o.ranks_per_run);
  detail::Queue<F> queue(family, o, share.first, share.stride, share.sender ? o.journal : nullptr);
  const int workers = queue_workers(o.ranks_per_run, family.size());
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
  const bool whole_job = share.group.has_value();
  share.group.reset();
  std::vector<std::optional<Result>>& finished = queue.finished();
  size_t reused = queue.reused();
  if (whole_job) {
    // Only a group's first rank sends (the others of a data-parallel run hold the same results).
    gather_runs_of_ranks(
        finished, share.sender, [&family](size_t i, const Result& r) { return family.records(i, r); },
        [&family](size_t i, const nlohmann::json& j) { return family.stored(i, j); });
    double taken = share.sender ? static_cast<double>(reused) : 0;  // every group's runs from the earlier records
    dist::allreduce_sum(&taken, 1);
    reused = static_cast<size_t>(taken);
  }
  RunSet<Result> runs;
  runs.total = family.size();
  runs.reused = reused;
  for (size_t i = 0; i < finished.size() && finished[i] && !finished[i]->interrupted; ++i)
    runs.results.push_back(std::move(*finished[i]));
  runs.wall_seconds = queue.elapsed_seconds();
  return runs;
}

}  // namespace normlab::experiments
