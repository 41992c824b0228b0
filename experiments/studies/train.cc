// `normlab train`: one run, with its metrics as CSV, plots, report, manifest and the final model
// as a safetensors checkpoint.
#include <cmath>
#include <sstream>

#include "experiments/models/archs.h"
#include "experiments/records/records.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/report/tidy.h"
#include "experiments/studies/study.h"
#include "experiments/support/git_commit.h"
#include "experiments/support/output.h"
#include "experiments/support/progress.h"
#include "nn/checkpoint.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

// One epoch's metrics as a line for the terminal (validation only when there is a validation set).
std::string epoch_line(const EpochRecord& e, const ScoreText& sc) {
  const std::string name = sc.percent ? "acc" : sc.name;
  return "epoch " + std::to_string(e.epoch) + ": train loss " + fmt(e.train_loss, 4) + ", train " + name + " " +
         sc.format(e.train_acc) + ", " +
         (std::isfinite(e.val_acc) ? "val " + name + " " + sc.format(e.val_acc) + ", " : std::string()) +
         "test loss " + fmt(e.test_loss, 4) + ", test " + name + " " + sc.format(e.test_acc);
}

// The fixed styles of the held-out splits' curves: train grey dashed with open circles, validation
// black dash-dotted with open squares, test black solid with filled circles (the norm's own
// colour is its loss per step).
const Style kTrainStyle{kGrey, 6, 2}, kValStyle{kBlack, 4, 4}, kTestStyle{kBlack, 7, 0};

// Adds the series `name` to a loss panel and a score panel, one point per record (epochs or
// evaluations) at x = record.*x.
template <typename R>
void add_curves(PlotSpec& loss, PlotSpec& score, const std::string& name, Style style, const std::vector<R>& records,
                int64_t R::*x, double R::*l, double R::*s) {
  Series sl{name}, ss{name};
  sl.style = ss.style = style;
  for (const R& e : records) {
    sl.x.push_back(double(e.*x)), sl.y.push_back(e.*l);
    ss.x.push_back(double(e.*x)), ss.y.push_back(e.*s);
  }
  loss.series.push_back(sl), score.series.push_back(ss);
}

// "Accuracy" or "R²", to start a title.
std::string title_case(const ScoreText& sc) { return sc.percent ? "Accuracy" : sc.name; }

// The training loss per step, as loss_curve.png/.svg; returns the plots written.
std::vector<std::string> train_plots(const RunResult& r, const StudyContext& ctx, bool has_val) {
  if (!gnuplot_available() || r.steps.empty()) return {};
  const ScoreText sc = score_text(r.config);
  std::vector<std::string> plots;
  PlotSpec loss{"Training loss per step", "step", sc.loss};
  loss.log_y = LogY::if_wide;
  loss.dense = true;
  Series s{display_name(r.config.model.norm)};
  s.style = norm_style(r.config.model.norm);
  for (const auto& st : r.steps)
    if (std::isfinite(st.loss)) s.x.push_back(double(st.step)), s.y.push_back(st.loss);
  loss.series = {s};  // the loss of a diverged step is not finite: left out of the plot
  if (render_plot(loss, ctx.out, "loss_curve")) plots.push_back("loss_curve");
  // Per epoch: train (running mean over the epoch's batches), validation and test.
  PlotSpec el{"Loss per epoch", "epoch", sc.loss}, ea{title_case(sc) + " per epoch", "epoch", sc.name};
  el.integer_x = ea.integer_x = true;
  el.log_y = LogY::if_wide;
  ea.percent_y = sc.percent;
  add_curves(el, ea, "train", kTrainStyle, r.epochs, &EpochRecord::epoch, &EpochRecord::train_loss, &EpochRecord::train_acc);
  if (has_val)
    add_curves(el, ea, "validation", kValStyle, r.epochs, &EpochRecord::epoch, &EpochRecord::val_loss, &EpochRecord::val_acc);
  add_curves(el, ea, "test", kTestStyle, r.epochs, &EpochRecord::epoch, &EpochRecord::test_loss, &EpochRecord::test_acc);
  if (!r.epochs.empty() &&
      render_panels("Training run: loss and " + sc.name + " per epoch", {el, ea}, 2, ctx.out, "epochs"))
    plots.push_back("epochs");
  // Every --eval-every steps: validation and test against the step.
  if (!r.evals.empty()) {
    PlotSpec sl{"Loss every " + count_of(r.config.eval_every, "step"), "step", sc.loss},
        sa{title_case(sc) + " every " + count_of(r.config.eval_every, "step"), "step", sc.name};
    sa.percent_y = sc.percent;
    sl.log_y = LogY::if_wide;
    if (has_val)
      add_curves(sl, sa, "validation", kValStyle, r.evals, &EvalRecord::step, &EvalRecord::val_loss, &EvalRecord::val_acc);
    add_curves(sl, sa, "test", kTestStyle, r.evals, &EvalRecord::step, &EvalRecord::test_loss, &EvalRecord::test_acc);
    if (render_panels("Training run: held-out loss and " + sc.name + " every " + count_of(r.config.eval_every, "step"),
                      {sl, sa}, 2, ctx.out, "evals"))
      plots.push_back("evals");
  }
  return plots;
}

// Where the model is, the report's last words: the final model, or the weights at the interruption
// or at the divergence.
std::string model_note(const RunResult& r, int64_t steps_done) {
  if (r.diverged)
    return "The run diverged: its weights are not a usable model. They are kept for inspection as "
           "`model.diverged.safetensors` (PyTorch state_dict names); there is no `model.safetensors`.\n";
  if (r.interrupted)
    return "`model.safetensors` (PyTorch state_dict names) holds the weights at the interruption, after " +
           std::to_string(steps_done) + " of " + std::to_string(r.total_steps) +
           " steps: not the final model (its metadata says interrupted=true and the steps done; eval and predict "
           "warn when they use it).\n";
  return "The final model is in `model.safetensors` (PyTorch state_dict names).\n";
}

std::string train_markdown(const RunResult& r, const StudyContext& ctx, bool has_val,
                           const std::vector<std::string>& plots, double y_std, int64_t steps_done) {
  const TrainConfig& c = r.config;
  const ScoreText sc = score_text(c);
  const std::string name = sc.percent ? "acc" : sc.name;
  const auto cell = [&](double v) { return sc.percent ? fmt(100 * v, 4) : fmt(v, 4); };
  std::ostringstream md;
  md << "Model " << describe(c.model) << " (" << (arch(c.model.arch).activation ? c.model.activation + ", " : "")
     << "norm " << c.model.norm
     << "), data: " << ctx.dataset << ". " << optimizer_text(c) << ", batch "
     << c.batch_size << ", " << count_of(c.epochs, "epoch") << ", seed " << c.seed << ".\n\n";
  if (!ctx.defaults_note.empty()) md << ctx.defaults_note << "\n\n";
  if (!sc.percent)
    md << "Regression: the loss is the mean squared error of the target standardized with the training split's "
          "mean and std; R² = 1 - SSE / SST (1: exact, 0: no better than the mean); RMSE in the target's units = "
          "sqrt(loss) x "
       << fmt(y_std, 4) << " (the target's std).\n\n";
  md << "| epoch | train loss | train " << name << sc.unit() << " |"
     << (has_val ? " val loss | val " + name + sc.unit() + " |" : std::string()) << " test loss | test " << name
     << sc.unit() << " |" << (sc.percent ? "" : " test RMSE |") << "\n|---|---|---|" << (has_val ? "---|---|" : "")
     << "---|---|" << (sc.percent ? "" : "---|") << "\n";
  for (const auto& e : r.epochs) {
    md << "| " << e.epoch << " | " << fmt(e.train_loss, 4) << " | " << cell(e.train_acc) << " | ";
    if (has_val) md << fmt(e.val_loss, 4) << " | " << cell(e.val_acc) << " | ";
    md << fmt(e.test_loss, 4) << " | " << cell(e.test_acc) << " |";
    if (!sc.percent) md << " " << fmt(std::sqrt(e.test_loss) * y_std, 4) << " |";
    md << "\n";
  }
  if (!has_val) md << "\nNo validation set (`--val-fraction` 0): no validation metrics are recorded.\n";
  if (!r.evals.empty())
    md << "\nAlso evaluated every " << count_of(c.eval_every, "step") << " (`--eval-every`): " << r.evals.size()
       << " evaluations in evals.csv.\n";
  if (const std::string note = last_batch_note(c, r.train_samples); !note.empty()) md << "\n" << note << "\n";
  if (r.diverged) md << "\nThe run diverged at step " << r.diverged_step << ".\n";
  if (r.best_epoch > 0)
    md << "\nEarly stopping (`--early-stopping " << c.early_stopping << "`): "
       << (r.stopped_early ? "stopped after epoch " + std::to_string(r.epochs.back().epoch) + " of " +
                                 std::to_string(c.epochs) + ", " + count_of(c.early_stopping, "epoch") +
                                 " without a lower validation loss"
                           : std::string("ran every epoch"))
       << "; the model is epoch " << r.best_epoch << "'s, the lowest validation loss ("
       << fmt(final_epoch(r).val_loss, 4) << "), and its test " << sc.name << " is "
       << sc.format(final_epoch(r).test_acc) << ".\n";
  if (r.interrupted)
    md << "\n**Interrupted (Ctrl-C) after " << steps_done << " steps of "
       << r.total_steps << "**: the table holds the finished epochs; the steps of the unfinished one are in steps.csv; "
       << "the model is the one at the interruption. The same command with `--resume` continues the run from "
       << "`checkpoint/` and ends with the results of a run that never stopped.\n";
  md << "\n" << image_links(plots) << model_note(r, steps_done);
  return md.str();
}

}  // namespace

Report run_train(const CheckedRun& run, const Splits& data, const StudyContext& ctx) {
  const TrainConfig& config = run.config();
  prepare_output_dir(ctx.out);
  Progress progress(steps_per_run(config, data), ctx.quiet);
  const std::string label = "train: norm " + config.model.norm + ", seed " + std::to_string(config.seed);
  // Each epoch's line as soon as it is evaluated (above the bar on a terminal).
  const RunControl control{.checkpoint_dir = ctx.out / "checkpoint", .checkpoint_every = ctx.checkpoint_every,
                           .resume = ctx.resume_checkpoint};
  int64_t steps_done = 0;  // the steps taken (fewer than planned when Ctrl-C stops the run)
  RunResult r = train_run(
      run, data, [&](int64_t done, int64_t) { progress.update(steps_done = done, label); },
      [&](const EpochRecord& e) { progress.line(epoch_line(e, score_text(config))); }, control);
  if (r.diverged) progress.line("diverged at step " + std::to_string(r.diverged_step) + " (loss is not finite)");
  progress.finish();
  const bool has_val = data.validation.size() > 0;
  write_run_records({r}, ctx.dataset, has_val, ctx.out);
  auto metadata = checkpoint_metadata(r.config.model);
  for (const auto& [k, v] : ctx.checkpoint_data) metadata[k] = v;
  metadata["normlab"] = NORMLAB_VERSION;
  metadata["git_commit"] = git_commit();
  metadata["format"] = "pt";
  metadata["steps"] = std::to_string(r.interrupted ? steps_done : r.total_steps);
  metadata["repr"] = r.model->str();
  if (r.diverged) metadata["diverged_at_step"] = std::to_string(r.diverged_step);
  if (r.interrupted) metadata["interrupted"] = "true", metadata["planned_steps"] = std::to_string(r.total_steps);
  if (r.best_epoch > 0) metadata["best_epoch"] = std::to_string(r.best_epoch);
  nn::save_module((ctx.out / (r.diverged ? "model.diverged.safetensors" : "model.safetensors")).string(), *r.model,
                  metadata);
  Report rep{"Training run",
             train_markdown(r, ctx, has_val, train_plots(r, ctx, has_val), data.standardizer.y_std, steps_done),
             r.diverged};
  rep.interrupted = r.interrupted;
  nlohmann::json man = manifest(ctx, {{"study", "train"}, {"config", to_json(r.config)}}, r.seconds);
  man["interrupted"] = r.interrupted;
  // What model.safetensors records about the data, also here: classes, features, preprocessing.
  for (const auto& [k, v] : ctx.checkpoint_data)
    man["data"][k] = !v.empty() && (v[0] == '[' || v[0] == '{') ? nlohmann::json::parse(v) : nlohmann::json(v);
  write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments::studies
