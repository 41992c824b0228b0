// The GPT studies' run records and journal (lm_records.h).
#include "experiments/studies/lm_records.h"

#include <cmath>

#include "base/error.h"
#include "dist/dist.h"
#include "experiments/records/records.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

namespace {

nlohmann::json num(double v) { return json_number(v); }  // records.h
double val(const nlohmann::json& j) { return number_from_json(j); }

// The runs of train_lm_runs as a family of the run queue (run/queue.h).
struct LmRunFamily {
  using Result = LmRunResult;
  const std::vector<LmRunSpec>& specs;
  const std::string& command;

  size_t size() const { return specs.size(); }
  int64_t steps(size_t i) const { return specs[i].config.steps; }
  std::string label(size_t i) const { return lm_run_label(command, specs[i]); }
  LmRunResult train(size_t i, const std::function<void(int64_t)>& on_step) const {
    return train_lm_run(specs[i], lm_study_rules(specs[i]),
                        [&on_step](const LmRunResult& r) { on_step(static_cast<int64_t>(r.steps.size())); });
  }
  std::optional<LmRunResult> stored(size_t i, const nlohmann::json& j) const { return stored_lm_run(j, specs[i]); }
  nlohmann::json records(size_t i, const LmRunResult& r) const { return lm_records_json(specs[i], r); }
  std::string outcome(const LmRunResult& r) const { return lm_outcome(r); }
};

}  // namespace

nlohmann::json lm_run_settings(const LmRunSpec& s) {
  const LmTrainConfig& c = s.config;
  return {{"variant", s.variant},
          {"train", to_json(c.train)},
          {"steps", c.steps},
          {"clip_grad_norm", num(c.clip_grad_norm)},
          {"model", char_model_metadata(c.model)},
          {"corpus", s.corpus->name},
          {"characters", s.corpus->characters},
          {"validation_fraction", num(s.corpus->validation_fraction)},
          {"periodic", s.periodic},
          {"sample", s.sample}};
}

nlohmann::json lm_records_json(const LmRunSpec& s, const LmRunResult& r) {
  nlohmann::json steps = nlohmann::json::array(), evals = nlohmann::json::array();
  for (const LmStep& x : r.steps) steps.push_back({x.step, num(x.loss), num(x.lr), num(x.grad_norm)});
  for (const LmEvalPoint& e : r.evals)
    evals.push_back({e.step, e.windows, e.all, num(e.val_loss), num(e.val_loss_train_mode)});
  return {{"config", lm_run_settings(s)}, {"parameters", r.parameters}, {"steps", steps}, {"evals", evals},
          {"diverged", r.diverged}, {"seconds", num(r.seconds)}, {"sample_prompt", r.sample_prompt},
          {"sample", r.sample}};
}

std::optional<LmRunResult> stored_lm_run(const nlohmann::json& j, const LmRunSpec& s) {
  if (!j.is_object() || j.value("config", nlohmann::json()) != lm_run_settings(s)) return std::nullopt;
  try {
    LmRunResult r;
    r.variant = s.variant;
    r.seed = s.config.train.seed;
    r.batch_size = s.config.train.batch_size;
    r.block_size = s.config.model.block_size;
    r.steps_planned = s.config.steps;
    r.parameters = j.at("parameters");
    for (const auto& x : j.at("steps")) r.steps.push_back({x[0], val(x[1]), val(x[2]), val(x[3])});
    for (const auto& e : j.at("evals")) r.evals.push_back({e[0], e[1], e[2], val(e[3]), val(e[4])});
    r.diverged = j.at("diverged");
    r.seconds = val(j.at("seconds"));
    r.sample_prompt = j.at("sample_prompt");
    r.sample = j.at("sample");
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // damaged: trained again
  }
}

void write_lm_records(const std::filesystem::path& path, const std::vector<LmRunSpec>& specs,
                      const std::vector<LmRunResult>& results) {
  nlohmann::json runs = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) runs.push_back(lm_records_json(specs[i], results[i]));
  write_file_atomic(path, nlohmann::json{{"runs", runs}}.dump() + "\n");
}

LmRuns train_lm_runs(const std::vector<LmRunSpec>& specs, bool quiet, const std::string& command,
                     const std::vector<nlohmann::json>& previous, RunJournal* journal) {
  // In an mpirun job each rank trains every W-th run from its rank on; rank 0 journals its own.
  return run_queue(LmRunFamily{specs, command},
                   {.quiet = quiet, .previous = &previous, .journal = dist::job_rank() == 0 ? journal : nullptr});
}

LmRuns train_and_record_lm_runs(const std::vector<LmRunSpec>& specs, const StudyContext& ctx,
                                const std::string& command) {
  RunJournal journal(ctx.out / kJournal, ctx.settings);
  LmRuns runs = train_lm_runs(specs, ctx.quiet, command, previous_runs(ctx.resume_from, ctx.resume_killed), &journal);
  write_lm_records(ctx.out / "records.json", specs, runs.results);
  return runs;
}

}  // namespace normlab::experiments::studies
