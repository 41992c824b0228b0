// Running a list of training runs with one progress bar.
#include "experiments/runs.h"

#include <optional>

#include "experiments/interrupt.h"
#include "experiments/progress.h"
#include "experiments/records.h"

namespace normlab::experiments {

Runs run_all(const std::vector<TrainConfig>& configs, const Splits& data, bool quiet,
             const std::function<std::string(const TrainConfig&)>& label,
             const std::function<std::string(const RunResult&)>& outcome,
             const std::vector<nlohmann::json>& previous) {
  int64_t total = 0;
  for (const auto& c : configs) total += steps_per_run(c, data);
  Progress progress(total, quiet);
  Runs runs;
  runs.total = configs.size();
  int64_t base_done = 0;
  for (size_t i = 0; i < configs.size() && !interrupted(); ++i) {
    const TrainConfig& c = configs[i];
    const std::string name = label(c);
    std::optional<RunResult> kept = i < previous.size() ? stored_run(previous[i], c) : std::nullopt;
    RunResult r = kept ? std::move(*kept)
                       : train_run(c, data, [&](int64_t done, int64_t) { progress.update(base_done + done, name); });
    base_done += steps_per_run(c, data);
    if (r.interrupted) break;
    r.model.reset();  // only the records are kept
    progress.line(name + ": " + outcome(r) + (kept ? " (from the earlier records)" : ""));
    runs.reused += kept ? 1 : 0;
    runs.results.push_back(std::move(r));
  }
  progress.finish();
  runs.wall_seconds = progress.elapsed_seconds();
  return runs;
}

}  // namespace normlab::experiments
