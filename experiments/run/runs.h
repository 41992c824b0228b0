// The classification runs of a study (MLP, CNN, LSTM) in the run queue (queue.h): each a checked
// configuration trained by train_run on the study's data.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/records/records.h"
#include "experiments/run/queue.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments {

// The finished classification runs of a study (queue.h), models dropped.
using Runs = RunSet<RunResult>;

// A run's name on the progress bar, and what its line says when it ends.
using RunLabel = std::function<std::string(const TrainConfig&)>;
using RunOutcome = std::function<std::string(const RunResult&)>;

// Trains every run (checked when its command was planned) in the run queue (run_queue, queue.h):
// side by side on the kernels' threads, shared by an mpirun job's ranks, each finished run
// journaled, a run that `previous` (an earlier command's records with the same settings, records.h)
// holds taken instead of trained. With ranks_per_run = R > 1 (configs with distributed set), each
// run trains data-parallel over a group of R ranks, one run at a time; W must be a multiple of R.
Runs run_all(const std::vector<CheckedRun>& configs, const Splits& data, bool quiet, const RunLabel& label,
             const RunOutcome& outcome,
             const std::vector<nlohmann::json>& previous = {}, int ranks_per_run = 1, RunJournal* journal = nullptr);

}  // namespace normlab::experiments
