// Running a list of training runs, one after another or side by side on the kernels' threads, with
// one progress bar and a line per run.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/records/records.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments {

struct Runs {
  std::vector<RunResult> results;  // the finished runs, in the order of the configurations, models dropped
  size_t total = 0;                // runs planned
  size_t reused = 0;               // runs taken from the records of an earlier, interrupted command
  double wall_seconds = 0;
  // Ctrl-C stopped the command: results holds the first results.size() runs only.
  bool interrupted() const { return results.size() < total; }
};

// Trains every run (checked when its command was planned), taking a run from `previous` (the records of an earlier command
// with the same settings, records.h) instead of training it when that holds it. With
// autograd::num_threads() = T > 1, T runs train at once, each on one thread (claimed in order;
// the results are the same bits as one after another). The progress bar shows label(config);
// when a run ends, the line "label: outcome(result)" is printed (in the order the runs end).
// Nothing is printed when quiet. Ctrl-C stops after the current step: the unfinished runs are
// dropped, and so are the runs after the first unfinished one; no other starts. A run that
// throws stops the others from starting and the error is rethrown. In an mpirun job of W
// processes, rank r trains runs r, r + W, r + 2W, ... and every rank then holds every run's
// results (their records exchanged: the same CSV files as one process writes).
// With ranks_per_run = R > 1 (configs with distributed set), the W processes form W / R groups of
// R consecutive ranks (dist::Group): group g trains runs g, g + W/R, ..., each data-parallel over
// its R ranks, one run at a time; W must be a multiple of R.
// With a journal (records.h), every run this process finishes (trained or taken from `previous`)
// is appended to it the moment it finishes: a command killed later keeps it for --resume.
// A run's name on the progress bar, and what its line says when it ends.
using RunLabel = std::function<std::string(const TrainConfig&)>;
using RunOutcome = std::function<std::string(const RunResult&)>;

Runs run_all(const std::vector<CheckedRun>& configs, const Splits& data, bool quiet, const RunLabel& label,
             const RunOutcome& outcome,
             const std::vector<nlohmann::json>& previous = {}, int ranks_per_run = 1, RunJournal* journal = nullptr);

}  // namespace normlab::experiments
