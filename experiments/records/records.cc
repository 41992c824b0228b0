// Runs' records as JSON, written and read back exactly.
#include "experiments/records/records.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "dist/dist.h"
#include "experiments/models/char_model.h"
#include "experiments/registry/optimizers.h"
#include "experiments/support/output.h"

namespace normlab::experiments {

nlohmann::json json_number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

double number_from_json(const nlohmann::json& j) {
  if (!j.is_string()) return j.get<double>();
  const std::string s = j.get<std::string>();
  return s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : NAN;
}

namespace {

nlohmann::json num(double v) { return json_number(v); }
double val(const nlohmann::json& j) { return number_from_json(j); }

}  // namespace

nlohmann::json to_json(const TrainConfig& c) {
  nlohmann::json model = {{"inputs", c.model.inputs}, {"hidden", c.model.hidden}, {"outputs", c.model.outputs},
                          {"activation", c.model.activation}, {"norm", c.model.norm}, {"groups", c.model.groups}};
  if (c.model.arch != "mlp") model["arch"] = c.model.arch, model["image"] = c.model.image, model["layers"] = c.model.layers;
  nlohmann::json j = {{"model", model},
          {"epochs", c.epochs}, {"batch_size", c.batch_size}, {"lr", c.lr}, {"momentum", c.momentum},
          {"weight_decay", c.weight_decay}, {"nesterov", c.nesterov}, {"warmup_steps", c.warmup_steps},
          {"schedule", c.schedule}, {"step_every", c.step_every}, {"step_gamma", c.step_gamma},
          {"seed", c.seed}, {"loss_every", c.loss_every}, {"stats_every", c.stats_every},
          {"bn_three_ways", c.bn_three_ways}, {"precise_bn_samples", c.precise_bn_samples},
          {"eval_batch", c.eval_batch}};
  if (!c.init_from.empty()) j["init_from"] = c.init_from;
  if (c.eval_every > 0) j["eval_every"] = c.eval_every;
  if (c.probe_every > 0) j["probe_every"] = c.probe_every;
  if (c.curvature_samples > 0)
    j["curvature"] = {{"samples", c.curvature_samples}, {"iters", c.curvature_iters}, {"tol", c.curvature_tol},
                      {"trace_samples", c.trace_samples}};
  if (c.early_stopping > 0) j["early_stopping"] = c.early_stopping;
  if (c.clip_grad_norm > 0) j["clip_grad_norm"] = c.clip_grad_norm;
  if (c.task != data::Task::Classification) j["task"] = task_name(c.task);
  if (c.distributed) j["distributed_ranks"] = c.ranks > 0 ? c.ranks : dist::world_size();
  if (const OptimizerEntry& o = optimizer(c.optimizer); o.json) j["optimizer"] = o.json(c);
  return j;
}

nlohmann::json records_json(const RunResult& r) {
  nlohmann::json steps = nlohmann::json::array(), epochs = nlohmann::json::array(),
                 acts = nlohmann::json::array(), grads = nlohmann::json::array();
  for (const auto& s : r.steps) steps.push_back({s.step, s.epoch, num(s.lr), num(s.loss)});
  for (const auto& e : r.epochs)
    epochs.push_back({e.epoch, e.step, num(e.train_loss), num(e.train_acc), num(e.val_loss), num(e.val_acc),
                      num(e.test_loss), num(e.test_acc), num(e.test_acc_precise), num(e.test_acc_batch)});
  for (const auto& a : r.activations) acts.push_back({a.step, a.layer, a.where, num(a.mean), num(a.std)});
  for (const auto& g : r.grad_norms) grads.push_back({g.step, g.param, num(g.norm)});
  nlohmann::json j = {{"config", to_json(r.config)}, {"steps", steps}, {"epochs", epochs}, {"activations", acts},
                      {"grad_norms", grads}, {"diverged", r.diverged}, {"diverged_step", r.diverged_step},
                      {"total_steps", r.total_steps}, {"seconds", r.seconds}};
  if (r.best_epoch > 0) j["best_epoch"] = r.best_epoch, j["stopped_early"] = r.stopped_early;
  if (!r.input_grads.empty()) {
    nlohmann::json g = nlohmann::json::array();
    for (const auto& x : r.input_grads) g.push_back({x.step, x.time_step, num(x.norm)});
    j["input_grads"] = g;
  }
  if (!r.evals.empty()) {
    nlohmann::json evals = nlohmann::json::array();
    for (const auto& e : r.evals)
      evals.push_back({e.step, e.epoch, num(e.val_loss), num(e.val_acc), num(e.test_loss), num(e.test_acc)});
    j["evals"] = evals;
  }
  if (!r.shifts.empty() || !r.landscape.empty()) {
    nlohmann::json shifts = nlohmann::json::array(), land = nlohmann::json::array();
    for (const auto& x : r.shifts) shifts.push_back({x.step, x.layer, x.name, num(x.ics), num(x.relative), num(x.cosine)});
    for (const auto& x : r.landscape)
      land.push_back({x.step, num(x.multiplier), num(x.eta), num(x.loss), num(x.grad_change), num(x.grad_norm),
                      num(x.loss_variation), num(x.grad_predictiveness), num(x.beta_smoothness)});
    j["shifts"] = shifts, j["landscape"] = land;
  }
  if (!r.curvature.empty()) {
    nlohmann::json c = nlohmann::json::array();
    for (const auto& x : r.curvature)
      c.push_back({x.step, x.point, num(x.eigenvalue), x.iterations, x.converged, num(x.trace), num(x.trace_se),
                   x.trace_samples});
    j["curvature"] = c;
  }
  return j;
}

void write_records(const std::filesystem::path& path, const std::vector<RunResult>& runs) {
  nlohmann::json all = nlohmann::json::array();
  for (const RunResult& r : runs) all.push_back(records_json(r));
  write_file_atomic(path, nlohmann::json{{"normlab_records", 1}, {"runs", all}}.dump() + "\n");
}

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

// A language model's steps are written as [step from 1, loss, lr, grad_norm], its evaluations as
// [step, windows, all, val_loss, val_loss_train_mode].
nlohmann::json records_json(const LmRunSpec& s, const RunResult& r) {
  nlohmann::json steps = nlohmann::json::array(), evals = nlohmann::json::array();
  for (const StepRecord& x : r.steps) steps.push_back({x.step + 1, num(x.loss), num(x.lr), num(x.grad_norm)});
  for (const EvalRecord& e : r.evals)
    evals.push_back({e.step, e.windows, e.all, num(e.val_loss), num(e.val_loss_train_mode)});
  return {{"config", lm_run_settings(s)}, {"parameters", r.parameters}, {"steps", steps}, {"evals", evals},
          {"diverged", r.diverged}, {"seconds", num(r.seconds)}, {"sample_prompt", r.sample_prompt},
          {"sample", r.sample}};
}

void write_records(const std::filesystem::path& path, const std::vector<LmRunSpec>& specs,
                   const std::vector<RunResult>& results) {
  nlohmann::json runs = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) runs.push_back(records_json(specs[i], results[i]));
  write_file_atomic(path, nlohmann::json{{"runs", runs}}.dump() + "\n");
}

namespace {

// Syncs a folder, so that a file made in it survives a power loss.
void sync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The lines of a journal that parse as JSON objects (a line cut by a kill is left out).
std::vector<nlohmann::json> journal_lines(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(f, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) lines.push_back(j);
  }
  return lines;
}

}  // namespace

void RunJournal::append(size_t index, const nlohmann::json& records) {
  const bool fresh = !std::filesystem::exists(path_);
  std::string text;
  if (fresh) {
    nlohmann::json h = header_.is_object() ? header_ : nlohmann::json::object();
    h["normlab_journal"] = 1;
    text = h.dump() + "\n";
  }
  text += nlohmann::json{{"index", offset_ + index}, {"records", records}}.dump() + "\n";
  append_file_synced(path_, text);
  if (fresh) sync_dir(path_.parent_path()), sync_dir(path_.parent_path().parent_path());
}

nlohmann::json journal_header(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::string line;
  if (!std::getline(f, line)) return nullptr;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  return !j.is_discarded() && j.is_object() && j.contains("normlab_journal") ? j : nlohmann::json();
}

std::optional<std::vector<nlohmann::json>> read_records(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(s.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("runs") || !j["runs"].is_array())
    throw Error(path.string() + ": not a normlab records file (it cannot be resumed)");
  return j["runs"].get<std::vector<nlohmann::json>>();
}

std::vector<nlohmann::json> previous_runs(const std::filesystem::path& folder,
                                          const std::vector<std::filesystem::path>& killed) {
  std::vector<nlohmann::json> runs;
  if (!folder.empty()) runs = read_records(folder / "records.json").value_or(std::vector<nlohmann::json>{});
  const auto put = [&runs](size_t i, const nlohmann::json& run) {
    if (i >= runs.size()) runs.resize(i + 1);
    if (runs[i].is_null()) runs[i] = run;
  };
  for (const std::filesystem::path& k : killed) {
    try {  // a killed command's records.json is complete (it was killed before the last rename)
      const auto all = read_records(k / "records.json").value_or(std::vector<nlohmann::json>{});
      for (size_t i = 0; i < all.size(); ++i) put(i, all[i]);
    } catch (const Error&) {
    }
    for (const nlohmann::json& line : journal_lines(k / kJournal))
      if (line.contains("index") && line["index"].is_number_unsigned() && line.contains("records"))
        put(line["index"].get<size_t>(), line["records"]);
  }
  return runs;
}

std::optional<RunResult> stored_run(const nlohmann::json& j, const TrainConfig& config) {
  if (!j.is_object() || j.value("config", nlohmann::json()) != to_json(config)) return std::nullopt;
  try {
    RunResult r;
    r.config = config;
    for (const auto& s : j.at("steps")) r.steps.push_back({s[0], s[1], val(s[2]), val(s[3])});
    for (const auto& e : j.at("epochs"))
      r.epochs.push_back({e[0], e[1], val(e[2]), val(e[3]), val(e[4]), val(e[5]), val(e[6]), val(e[7]), val(e[8]),
                          val(e[9])});
    for (const auto& a : j.at("activations")) r.activations.push_back({a[0], a[1], a[2], val(a[3]), val(a[4])});
    for (const auto& g : j.at("grad_norms")) r.grad_norms.push_back({g[0], g[1], val(g[2])});
    if (j.contains("input_grads"))
      for (const auto& g : j.at("input_grads")) r.input_grads.push_back({g[0], g[1], val(g[2])});
    if (j.contains("evals"))
      for (const auto& e : j.at("evals"))
        r.evals.push_back({e[0], e[1], val(e[2]), val(e[3]), val(e[4]), val(e[5])});
    if (j.contains("shifts"))
      for (const auto& x : j.at("shifts")) r.shifts.push_back({x[0], x[1], x[2], val(x[3]), val(x[4]), val(x[5])});
    if (j.contains("landscape"))
      for (const auto& x : j.at("landscape"))
        r.landscape.push_back({x[0], val(x[1]), val(x[2]), val(x[3]), val(x[4]), val(x[5]), val(x[6]), val(x[7]),
                               val(x[8])});
    if (j.contains("curvature"))
      for (const auto& x : j.at("curvature"))
        r.curvature.push_back({x[0], x[1], val(x[2]), x[3], x[4], val(x[5]), val(x[6]), x[7]});
    r.diverged = j.at("diverged");
    r.diverged_step = j.at("diverged_step");
    r.total_steps = j.at("total_steps");
    r.best_epoch = j.value("best_epoch", int64_t(0));
    r.stopped_early = j.value("stopped_early", false);
    r.seconds = j.at("seconds");
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // damaged: run it again
  }
}

std::optional<RunResult> stored_run(const nlohmann::json& j, const LmRunSpec& s) {
  if (!j.is_object() || j.value("config", nlohmann::json()) != lm_run_settings(s)) return std::nullopt;
  try {
    RunResult r = lm_result_of(s);
    r.parameters = j.at("parameters");
    for (const auto& x : j.at("steps")) r.steps.push_back({x[0].get<int64_t>() - 1, 1, val(x[2]), val(x[1]), val(x[3])});
    for (const auto& x : j.at("evals")) {
      EvalRecord e;
      e.step = x[0], e.windows = x[1], e.all = x[2], e.val_loss = val(x[3]), e.val_loss_train_mode = val(x[4]);
      r.evals.push_back(e);
    }
    r.diverged = j.at("diverged");
    r.seconds = val(j.at("seconds"));
    r.sample_prompt = j.at("sample_prompt");
    r.sample = j.at("sample");
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // damaged: trained again
  }
}

}  // namespace normlab::experiments
