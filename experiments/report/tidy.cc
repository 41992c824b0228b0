// Tidy CSV tables of runs: the settings columns, the epoch columns, the per-run records.
#include "experiments/report/tidy.h"

#include "experiments/models/model.h"
#include "experiments/report/report.h"

namespace normlab::experiments::report {

std::vector<std::string> settings_header() {
  return {"dataset", "model", "norm", "activation", "seed", "epochs", "batch_size", "lr", "momentum",
          "weight_decay", "warmup_steps", "schedule"};
}

std::vector<std::string> settings_cells(const TrainConfig& c, const std::string& dataset) {
  return {dataset, describe(c.model), c.model.norm, c.model.activation, std::to_string(c.seed),
          std::to_string(c.epochs), std::to_string(c.batch_size), fmt(c.lr), fmt(c.momentum),
          fmt(c.weight_decay), std::to_string(c.warmup_steps), c.schedule};
}

std::vector<std::string> epoch_columns(bool validation, bool bn_columns, const std::string& score) {
  std::vector<std::string> h{"epoch", "step", "train_loss", "train_" + score};
  if (validation) h.insert(h.end(), {"val_loss", "val_" + score});
  h.insert(h.end(), {"test_loss", "test_" + score});
  if (bn_columns) h.insert(h.end(), {"test_" + score + "_precise", "test_" + score + "_batch"});
  return h;
}

std::vector<std::string> epoch_cells(const EpochRecord& e, bool validation, bool bn_columns) {
  std::vector<std::string> c{std::to_string(e.epoch), std::to_string(e.step), fmt(e.train_loss), fmt(e.train_acc)};
  if (validation) c.insert(c.end(), {fmt(e.val_loss), fmt(e.val_acc)});
  c.insert(c.end(), {fmt(e.test_loss), fmt(e.test_acc)});
  if (bn_columns) c.insert(c.end(), {fmt(e.test_acc_precise), fmt(e.test_acc_batch)});
  return c;
}

namespace {
std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

RunTable::RunTable(std::vector<std::string> columns, std::string dataset)
    : table_(concat(settings_header(), columns)), dataset_(std::move(dataset)) {}

void RunTable::add(const RunResult& r, const std::vector<std::string>& cells) {
  table_.add_row(concat(settings_cells(r.config, dataset_), cells));
}

void write_run_records(const std::vector<RunResult>& runs, const std::string& dataset, bool validation,
                       const std::filesystem::path& dir) {
  RunTable steps({"step", "epoch", "step_lr", "loss"}, dataset);
  const std::string score = runs.empty() ? "acc" : score_text(runs.front().config).csv;
  RunTable epochs(epoch_columns(validation, false, score), dataset);
  RunTable acts({"step", "layer", "where", "mean", "std"}, dataset);
  RunTable grads({"step", "param", "grad_norm"}, dataset);
  std::vector<std::string> eval_cols{"step", "epoch"};
  if (validation) eval_cols.insert(eval_cols.end(), {"val_loss", "val_" + score});
  eval_cols.insert(eval_cols.end(), {"test_loss", "test_" + score});
  RunTable evals(eval_cols, dataset);
  RunTable inputs({"step", "time_step", "input_grad_norm"}, dataset);
  bool any_evals = false, any_inputs = false;
  for (const RunResult& r : runs) {
    for (const auto& e : r.evals) {
      std::vector<std::string> c{std::to_string(e.step), std::to_string(e.epoch)};
      if (validation) c.insert(c.end(), {fmt(e.val_loss), fmt(e.val_acc)});
      c.insert(c.end(), {fmt(e.test_loss), fmt(e.test_acc)});
      evals.add(r, c);
      any_evals = true;
    }
    for (const auto& s : r.steps) steps.add(r, {std::to_string(s.step), std::to_string(s.epoch), fmt(s.lr), fmt(s.loss)});
    for (const auto& e : r.epochs) epochs.add(r, epoch_cells(e, validation, false));
    for (const auto& a : r.activations)
      acts.add(r, {std::to_string(a.step), std::to_string(a.layer), a.where, fmt(a.mean), fmt(a.std)});
    for (const auto& g : r.grad_norms) grads.add(r, {std::to_string(g.step), g.param, fmt(g.norm)});
    for (const auto& g : r.input_grads)
      inputs.add(r, {std::to_string(g.step), std::to_string(g.time_step), fmt(g.norm)}), any_inputs = true;
  }
  steps.write(dir / "steps.csv");
  epochs.write(dir / "epochs.csv");
  acts.write(dir / "activations.csv");
  grads.write(dir / "grad_norms.csv");
  if (any_evals) evals.write(dir / "evals.csv");
  if (any_inputs) inputs.write(dir / "input_grad_norms.csv");
  write_probe_records(runs, settings_header(), [&](const RunResult& r) { return settings_cells(r.config, dataset); },
                      dir);
}

void write_probe_records(const std::vector<RunResult>& runs, const std::vector<std::string>& lead_columns,
                         const std::function<std::vector<std::string>(const RunResult&)>& lead,
                         const std::filesystem::path& dir) {
  CsvTable shifts(concat(lead_columns, {"step", "layer", "weight", "ics", "ics_relative", "cosine"}));
  CsvTable land(concat(lead_columns, {"step", "lr_multiplier", "eta", "loss", "grad_change", "grad_norm",
                                      "loss_variation", "grad_predictiveness", "beta_smoothness"}));
  CsvTable curv(concat(lead_columns, {"step", "point", "top_eigenvalue", "power_iterations", "converged", "trace",
                                      "trace_se", "trace_samples"}));
  bool any_probes = false, any_curvature = false;
  for (const RunResult& r : runs) {
    const std::vector<std::string> l = lead(r);
    for (const auto& x : r.shifts)
      shifts.add_row(concat(l, {std::to_string(x.step), std::to_string(x.layer), x.name, fmt(x.ics), fmt(x.relative),
                                fmt(x.cosine)}));
    for (const auto& x : r.landscape)
      land.add_row(concat(l, {std::to_string(x.step), fmt(x.multiplier), fmt(x.eta), fmt(x.loss), fmt(x.grad_change),
                              fmt(x.grad_norm), fmt(x.loss_variation), fmt(x.grad_predictiveness),
                              fmt(x.beta_smoothness)}));
    any_probes = any_probes || !r.shifts.empty() || !r.landscape.empty();
    for (const auto& x : r.curvature)
      curv.add_row(concat(l, {std::to_string(x.step), x.point, fmt(x.eigenvalue), std::to_string(x.iterations),
                              x.converged ? "true" : "false", fmt(x.trace), fmt(x.trace_se),
                              std::to_string(x.trace_samples)})),
          any_curvature = true;
  }
  if (any_probes) shifts.write(dir / "shifts.csv"), land.write(dir / "landscape.csv");
  if (any_curvature) curv.write(dir / "curvature.csv");
}

}  // namespace normlab::experiments::report
