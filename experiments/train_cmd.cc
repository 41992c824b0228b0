// `normlab train`: one run, with its metrics as CSV, plots, report, manifest and the final model
// as a safetensors checkpoint.
#include <cmath>
#include <sstream>

#include "experiments/output.h"
#include "experiments/plot.h"
#include "experiments/progress.h"
#include "experiments/study.h"
#include "nn/checkpoint.h"

namespace normlab::experiments {

namespace {

// One epoch's metrics as a line for the terminal (validation only when there is a validation set).
std::string epoch_line(const EpochRecord& e) {
  return "epoch " + std::to_string(e.epoch) + ": train loss " + fmt(e.train_loss, 4) + ", train acc " +
         fmt(100 * e.train_acc, 4) + "%, " +
         (std::isfinite(e.val_acc) ? "val acc " + fmt(100 * e.val_acc, 4) + "%, " : std::string()) + "test loss " +
         fmt(e.test_loss, 4) + ", test acc " + fmt(100 * e.test_acc, 4) + "%";
}

}  // namespace

Report run_train(const TrainConfig& config, const Splits& data, const StudyContext& ctx) {
  validate(config, data);
  prepare_output_dir(ctx.out);
  Progress progress(steps_per_run(config, data), ctx.quiet);
  const std::string label = "train: norm " + config.model.norm + ", seed " + std::to_string(config.seed);
  // Each epoch's line as soon as it is evaluated (above the bar on a terminal).
  RunResult r = train_run(
      config, data, [&](int64_t done, int64_t) { progress.update(done, label); },
      [&](const EpochRecord& e) { progress.line(epoch_line(e)); });
  if (r.diverged) progress.line("diverged at step " + std::to_string(r.diverged_step) + " (loss is not finite)");
  progress.finish();
  const bool has_val = data.validation.size() > 0;

  auto header = [](std::vector<std::string> extra) {
    auto h = settings_header();
    h.insert(h.end(), extra.begin(), extra.end());
    return h;
  };
  auto row = [&](std::vector<std::string> extra) {
    auto cells = settings_cells(r.config, ctx.dataset);
    cells.insert(cells.end(), extra.begin(), extra.end());
    return cells;
  };
  CsvTable steps(header({"step", "epoch", "step_lr", "loss"}));
  for (const auto& s : r.steps) steps.add_row(row({std::to_string(s.step), std::to_string(s.epoch), fmt(s.lr), fmt(s.loss)}));
  CsvTable epochs(header(epoch_columns(has_val, false)));
  for (const auto& e : r.epochs) epochs.add_row(row(epoch_cells(e, has_val, false)));
  CsvTable acts(header({"step", "layer", "where", "mean", "std"}));
  for (const auto& a : r.activations)
    acts.add_row(row({std::to_string(a.step), std::to_string(a.layer), a.where, fmt(a.mean), fmt(a.std)}));
  CsvTable grads(header({"step", "param", "grad_norm"}));
  for (const auto& g : r.grad_norms) grads.add_row(row({std::to_string(g.step), g.param, fmt(g.norm)}));
  steps.write(ctx.out / "steps.csv");
  epochs.write(ctx.out / "epochs.csv");
  acts.write(ctx.out / "activations.csv");
  grads.write(ctx.out / "grad_norms.csv");
  nn::save_module((ctx.out / "model.safetensors").string(), *r.model,
                  {{"format", "pt"}, {"model", describe(r.config.model)}, {"norm", r.config.model.norm},
                   {"activation", r.config.model.activation}, {"steps", std::to_string(r.total_steps)}});

  std::vector<std::string> plots;
  if (gnuplot_available() && !r.steps.empty()) {
    PlotSpec loss{"Training loss", "step", "cross-entropy loss"};
    loss.log_y = true;
    Series s{r.config.model.norm};
    for (const auto& st : r.steps)
      if (std::isfinite(st.loss)) s.x.push_back(double(st.step)), s.y.push_back(st.loss);
    loss.series = {s};
    render_plot(loss, ctx.out, "loss_curve");
    plots.push_back("loss_curve");
  }
  std::ostringstream md;
  md << "Model " << describe(r.config.model) << " (" << r.config.model.activation << ", norm " << r.config.model.norm
     << "), data: " << ctx.dataset << ". SGD lr " << fmt(r.config.lr) << ", momentum " << fmt(r.config.momentum)
     << ", batch " << r.config.batch_size << ", " << r.config.epochs << " epochs, seed " << r.config.seed << ".\n\n";
  md << "| epoch | train loss | train acc (%) |" << (has_val ? " val loss | val acc (%) |" : "")
     << " test loss | test acc (%) |\n|---|---|---|" << (has_val ? "---|---|" : "") << "---|---|\n";
  for (const auto& e : r.epochs) {
    md << "| " << e.epoch << " | " << fmt(e.train_loss, 4) << " | " << fmt(100 * e.train_acc, 4) << " | ";
    if (has_val) md << fmt(e.val_loss, 4) << " | " << fmt(100 * e.val_acc, 4) << " | ";
    md << fmt(e.test_loss, 4) << " | " << fmt(100 * e.test_acc, 4) << " |\n";
  }
  if (!has_val) md << "\nNo validation set (`--val-fraction` 0): no validation metrics are recorded.\n";
  if (r.diverged) md << "\nThe run diverged at step " << r.diverged_step << ".\n";
  md << "\n";
  for (const auto& p : plots) md << "![" << p << "](" << p << ".png)\n\n";
  md << "The final model is in `model.safetensors` (PyTorch state_dict names).\n";
  Report rep{"Training run", md.str()};
  write_file_atomic(ctx.out / "report.md", "# " + rep.title + "\n\nCommand: `" + ctx.command_line + "`\n\n" + rep.markdown);
  write_file_atomic(ctx.out / "manifest.json",
                    manifest(ctx, {{"study", "train"}, {"config", to_json(r.config)}}, r.seconds).dump(2) + "\n");
  return rep;
}

}  // namespace normlab::experiments
