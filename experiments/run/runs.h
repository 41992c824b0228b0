// The runs of a study in the run queue (queue.h), for every family: the classification runs (MLP,
// CNN, LSTM), each a checked configuration trained by train_run on the study's data, and the
// language models' (GPT, char LSTM), each a spec trained by train_lm_run on its corpus.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/config/lm_config.h"
#include "experiments/records/records.h"
#include "experiments/run/queue.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments {

// The finished runs of a study (queue.h), models dropped.
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

// The same for language models' runs, each trained with the studies' rules (lm_study_rules,
// lm_run.h), one process each; in an mpirun job only rank 0 journals (its own runs).
using LmRunLabel = std::function<std::string(const LmRunSpec&)>;
Runs run_all(const std::vector<LmRunSpec>& specs, bool quiet, const LmRunLabel& label, const RunOutcome& outcome,
             const std::vector<nlohmann::json>& previous = {}, RunJournal* journal = nullptr);

}  // namespace normlab::experiments
