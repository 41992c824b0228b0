// Running a list of training runs with one progress bar.
#include "experiments/runs.h"

#include "experiments/progress.h"

namespace normlab::experiments {

Runs run_all(const std::vector<TrainConfig>& configs, const Splits& data, bool quiet,
             const std::function<std::string(const TrainConfig&)>& label,
             const std::function<std::string(const RunResult&)>& outcome) {
  int64_t total = 0;
  for (const auto& c : configs) total += steps_per_run(c, data);
  Progress progress(total, quiet);
  Runs runs;
  int64_t base_done = 0;
  for (const TrainConfig& c : configs) {
    const std::string name = label(c);
    RunResult r = train_run(c, data, [&](int64_t done, int64_t) { progress.update(base_done + done, name); });
    base_done += steps_per_run(c, data);
    r.model.reset();  // only the records are kept
    progress.line(name + ": " + outcome(r));
    runs.results.push_back(std::move(r));
  }
  progress.finish();
  runs.wall_seconds = progress.elapsed_seconds();
  return runs;
}

}  // namespace normlab::experiments
