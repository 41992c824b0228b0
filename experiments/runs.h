// Running a list of training runs one after another, with one progress bar and a line per run.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "experiments/trainer.h"

namespace normlab::experiments {

struct Runs {
  std::vector<RunResult> results;  // in the order of the configurations, models dropped
  double wall_seconds = 0;
};

// Trains every configuration in order. The progress bar shows label(config); when a run ends,
// the line "label: outcome(result)" is printed. Nothing is printed when quiet.
Runs run_all(const std::vector<TrainConfig>& configs, const Splits& data, bool quiet,
             const std::function<std::string(const TrainConfig&)>& label,
             const std::function<std::string(const RunResult&)>& outcome);

}  // namespace normlab::experiments
