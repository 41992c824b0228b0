// The classification runs of a study in the run queue (runs.h, queue.h).
#include "experiments/run/runs.h"

#include <optional>

#include "dist/dist.h"
#include "experiments/run/lm_run.h"

namespace normlab::experiments {

namespace {

// The runs of run_all as a family of the queue.
struct ClassificationRuns {
  using Result = RunResult;
  const std::vector<CheckedRun>& configs;
  const Splits& data;
  const RunLabel& label_of;
  const RunOutcome& outcome_of;

  size_t size() const { return configs.size(); }
  int64_t steps(size_t i) const { return steps_per_run(configs[i].config(), data); }
  std::string label(size_t i) const { return label_of(configs[i].config()); }
  RunResult train(size_t i, const std::function<void(int64_t)>& on_step) const {
    RunResult r = train_run(configs[i], data, [&on_step](int64_t done, int64_t) { on_step(done); });
    r.model.reset();  // only the records are kept (freed on the thread that made it)
    return r;
  }
  std::optional<RunResult> stored(size_t i, const nlohmann::json& j) const { return stored_run(j, configs[i].config()); }
  nlohmann::json records(size_t, const RunResult& r) const { return records_json(r); }
  std::string outcome(const RunResult& r) const { return outcome_of(r); }
};

// The language models' runs of run_all as a family of the queue.
struct LanguageModelRuns {
  using Result = RunResult;
  const std::vector<LmRunSpec>& specs;
  const LmRunLabel& label_of;
  const RunOutcome& outcome_of;

  size_t size() const { return specs.size(); }
  int64_t steps(size_t i) const { return specs[i].config.steps; }
  std::string label(size_t i) const { return label_of(specs[i]); }
  RunResult train(size_t i, const std::function<void(int64_t)>& on_step) const {
    return train_lm_run(specs[i], lm_study_rules(specs[i]),
                        [&on_step](const RunResult& r) { on_step(static_cast<int64_t>(r.steps.size())); });
  }
  std::optional<RunResult> stored(size_t i, const nlohmann::json& j) const { return stored_run(j, specs[i]); }
  nlohmann::json records(size_t i, const RunResult& r) const { return records_json(specs[i], r); }
  std::string outcome(const RunResult& r) const { return outcome_of(r); }
};

}  // namespace

Runs run_all(const std::vector<CheckedRun>& configs, const Splits& data, bool quiet, const RunLabel& label,
             const RunOutcome& outcome, const std::vector<nlohmann::json>& previous, int ranks_per_run,
             RunJournal* journal) {
  return run_queue(ClassificationRuns{configs, data, label, outcome},
                   {.quiet = quiet, .previous = &previous, .ranks_per_run = ranks_per_run, .journal = journal});
}

Runs run_all(const std::vector<LmRunSpec>& specs, bool quiet, const LmRunLabel& label, const RunOutcome& outcome,
             const std::vector<nlohmann::json>& previous, RunJournal* journal) {
  // In an mpirun job each rank trains every W-th run from its rank on and journals its own.
  return run_queue(LanguageModelRuns{specs, label, outcome}, {.quiet = quiet, .previous = &previous, .journal = journal});
}

}  // namespace normlab::experiments
