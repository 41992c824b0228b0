// `normlab compare`: the same model, data, seeds and budget under each norm; loss curves, accuracy
// per epoch, steps and epochs to a target accuracy, activation statistics and gradient norms, mean
// and std over seeds.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/layer_stats.h"
#include "experiments/output.h"
#include "experiments/plot.h"
#include "experiments/progress.h"
#include "experiments/stats.h"
#include "experiments/study.h"

namespace normlab::experiments {

namespace {

std::string pct(double v) { return std::isfinite(v) ? fmt(100 * v, 4) + "%" : "n/a"; }
std::string pm(double m, double s, bool percent) {
  if (!std::isfinite(m)) return "n/a";
  return percent ? fmt(100 * m, 4) + " ± " + fmt(100 * s, 2) : fmt(m, 4) + " ± " + fmt(s, 2);
}

// The first epoch whose held-out accuracy reaches the target (validation if there is one).
const EpochRecord* first_reaching(const RunResult& r, double target, bool use_val) {
  for (const auto& e : r.epochs)
    if ((use_val ? e.val_acc : e.test_acc) >= target) return &e;
  return nullptr;
}

}  // namespace

Report run_compare(const CompareConfig& cfg, const Splits& data, const StudyContext& ctx) {
  if (cfg.norms.empty() || cfg.seeds.empty()) throw Error("compare: needs at least one norm and one seed");
  for (const auto& n : cfg.norms) {
    TrainConfig c = cfg.base;
    c.model.norm = n;
    validate(c, data);
  }
  prepare_output_dir(ctx.out);
  const int64_t spr = steps_per_run(cfg.base, data);
  Progress progress(spr * static_cast<int64_t>(cfg.norms.size() * cfg.seeds.size()), ctx.quiet);
  const bool use_val = data.validation.size() > 0;
  std::vector<RunResult> runs;
  int64_t base_done = 0;
  for (const auto& norm : cfg.norms)
    for (uint64_t seed : cfg.seeds) {
      TrainConfig c = cfg.base;
      c.model.norm = norm;
      c.seed = seed;
      const std::string label = "compare: norm " + norm + ", seed " + std::to_string(seed);
      RunResult r = train_run(c, data, [&](int64_t done, int64_t) { progress.update(base_done + done, label); });
      base_done += spr;
      r.model.reset();
      std::string msg = label + ": ";
      if (r.diverged) msg += "diverged at step " + std::to_string(r.diverged_step);
      else msg += "test accuracy " + pct(r.epochs.back().test_acc) + ", test loss " + fmt(r.epochs.back().test_loss, 4);
      progress.line(msg);
      runs.push_back(std::move(r));
    }
  progress.finish();
  const double wall = progress.elapsed_seconds();

  // ---- Tidy CSVs ----
  auto header = [](std::vector<std::string> extra) {
    auto h = settings_header();
    h.insert(h.end(), extra.begin(), extra.end());
    return h;
  };
  auto row = [&](const RunResult& r, std::vector<std::string> extra) {
    auto cells = settings_cells(r.config, ctx.dataset);
    cells.insert(cells.end(), extra.begin(), extra.end());
    return cells;
  };
  CsvTable runs_csv(header({"diverged", "diverged_step", "final_train_loss", "final_test_loss", "final_test_acc",
                            "epochs_to_target", "steps_to_target", "target_acc"}));
  CsvTable steps_csv(header({"step", "epoch", "step_lr", "loss"}));
  CsvTable epochs_csv(header(epoch_columns(use_val, false)));
  CsvTable act_csv(header({"step", "layer", "where", "mean", "std"}));
  CsvTable grad_csv(header({"step", "param", "grad_norm"}));
  for (const RunResult& r : runs) {
    const EpochRecord* hit = first_reaching(r, cfg.target_accuracy, use_val);
    const EpochRecord* last = r.epochs.empty() ? nullptr : &r.epochs.back();
    runs_csv.add_row(row(r, {r.diverged ? "1" : "0", std::to_string(r.diverged_step),
                             last ? fmt(last->train_loss) : "nan", last ? fmt(last->test_loss) : "nan",
                             last ? fmt(last->test_acc) : "nan", hit ? std::to_string(hit->epoch) : "",
                             hit ? std::to_string(hit->step) : "", fmt(cfg.target_accuracy)}));
    for (const auto& s : r.steps)
      steps_csv.add_row(row(r, {std::to_string(s.step), std::to_string(s.epoch), fmt(s.lr), fmt(s.loss)}));
    for (const auto& e : r.epochs)
      epochs_csv.add_row(row(r, epoch_cells(e, use_val, false)));
    for (const auto& a : r.activations)
      act_csv.add_row(row(r, {std::to_string(a.step), std::to_string(a.layer), a.where, fmt(a.mean), fmt(a.std)}));
    for (const auto& g : r.grad_norms)
      grad_csv.add_row(row(r, {std::to_string(g.step), g.param, fmt(g.norm)}));
  }

  // ---- Summary per norm (mean and std over seeds) ----
  struct Agg {
    std::vector<double> acc, loss, epochs_to, steps_to;
    int diverged = 0, reached = 0;
  };
  std::map<std::string, Agg> agg;
  for (const RunResult& r : runs) {
    Agg& a = agg[r.config.model.norm];
    if (r.diverged) ++a.diverged;
    if (!r.epochs.empty() && !r.diverged) {
      a.acc.push_back(r.epochs.back().test_acc);
      a.loss.push_back(r.epochs.back().test_loss);
    }
    const EpochRecord* hit = first_reaching(r, cfg.target_accuracy, use_val);
    a.epochs_to.push_back(hit ? hit->epoch : NAN);
    a.steps_to.push_back(hit ? hit->step : NAN);
    if (hit) ++a.reached;
  }
  CsvTable summary(std::vector<std::string>{"norm", "runs", "diverged", "test_acc_mean", "test_acc_std", "test_loss_mean",
                                            "test_loss_std", "reached_target", "epochs_to_target_mean",
                                            "steps_to_target_mean", "steps_to_target_std"});
  for (const auto& norm : cfg.norms) {
    const Agg& a = agg[norm];
    summary.add_row({norm, std::to_string(cfg.seeds.size()), std::to_string(a.diverged), fmt(mean_of(a.acc)),
                     fmt(std_of(a.acc)), fmt(mean_of(a.loss)), fmt(std_of(a.loss)), std::to_string(a.reached),
                     fmt(mean_of(a.epochs_to)), fmt(mean_of(a.steps_to)), fmt(std_of(a.steps_to))});
  }
  runs_csv.write(ctx.out / "runs.csv");
  steps_csv.write(ctx.out / "steps.csv");
  epochs_csv.write(ctx.out / "epochs.csv");
  act_csv.write(ctx.out / "activations.csv");
  grad_csv.write(ctx.out / "grad_norms.csv");
  summary.write(ctx.out / "summary.csv");

  // ---- Plots ----
  std::vector<std::string> plots;
  if (gnuplot_available()) {
    const int64_t bin = std::max<int64_t>(1, spr / 100);
    PlotSpec loss{"Training loss (mean over seeds, band = std)", "step", "cross-entropy loss"};
    PlotSpec acc{"Test accuracy per epoch (mean over seeds, band = std)", "epoch", "test accuracy"};
    for (const auto& norm : cfg.norms) {
      std::map<int64_t, std::vector<double>> by_bin;   // bin -> per-seed bin means
      std::map<int64_t, std::vector<double>> by_epoch;
      for (const RunResult& r : runs) {
        if (r.config.model.norm != norm) continue;
        std::map<int64_t, std::pair<double, int>> bins;
        for (const auto& s : r.steps) {
          auto& b = bins[s.step / bin];
          b.first += s.loss, b.second += 1;
        }
        for (auto& [k, v] : bins) by_bin[k].push_back(v.first / v.second);
        for (const auto& e : r.epochs) by_epoch[e.epoch].push_back(e.test_acc);
      }
      Series sl{norm}, sa{norm};
      for (auto& [k, v] : by_bin) sl.x.push_back(double(k * bin + bin / 2)), sl.y.push_back(mean_of(v)), sl.spread.push_back(std_of(v));
      for (auto& [k, v] : by_epoch) sa.x.push_back(double(k)), sa.y.push_back(mean_of(v)), sa.spread.push_back(std_of(v));
      loss.series.push_back(sl);
      acc.series.push_back(sa);
    }
    loss.log_y = true;
    render_plot(loss, ctx.out, "loss_curves");
    render_plot(acc, ctx.out, "test_accuracy");
    plots = {"loss_curves", "test_accuracy"};
    // Per hidden layer: mean and std before and after the norm; per weight: its gradient norm.
    const auto act = activation_panels(runs, cfg.norms);
    if (!act.empty()) {
      render_panels("Hidden activations before (dashed) and after (solid) the norm, mean over seeds", act, 2, ctx.out,
                    "activations");
      plots.push_back("activations");
    }
    const auto grads = grad_norm_panels(runs, cfg.norms);
    if (!grads.empty()) {
      render_panels("Gradient norm of each weight matrix, mean over seeds", grads, std::min<int>(2, grads.size()), ctx.out,
                    "grad_norms");
      plots.push_back("grad_norms");
    }
  }

  // ---- Report: numbers computed from the results above ----
  std::ostringstream md;
  md << "Model " << describe(cfg.base.model) << " (" << cfg.base.model.activation << "), data: " << ctx.dataset
     << ". SGD lr " << fmt(cfg.base.lr) << ", momentum " << fmt(cfg.base.momentum) << ", batch " << cfg.base.batch_size
     << ", " << cfg.base.epochs << " epochs, schedule " << cfg.base.schedule << " with " << cfg.base.warmup_steps
     << " warmup steps; " << cfg.seeds.size() << " seeds per norm. Target accuracy " << pct(cfg.target_accuracy)
     << " on the " << (use_val ? "validation set" : "test set (there is no validation set: `--val-fraction` 0)")
     << ".\n\n";
  md << "| norm | final test accuracy (%) | final test loss | reached target | epochs to target | steps to target | diverged |\n";
  md << "|---|---|---|---|---|---|---|\n";
  for (const auto& norm : cfg.norms) {
    const Agg& a = agg[norm];
    md << "| " << norm << " | " << pm(mean_of(a.acc), std_of(a.acc), true) << " | " << pm(mean_of(a.loss), std_of(a.loss), false)
       << " | " << a.reached << "/" << cfg.seeds.size() << " | " << fmt(mean_of(a.epochs_to), 3) << " | "
       << fmt(mean_of(a.steps_to), 5) << " | " << a.diverged << " |\n";
  }
  md << "\n";
  for (const auto& p : plots) md << "![" << p << "](" << p << ".png)\n\n";
  // A factual reading.
  md << "**Reading.** ";
  std::string best;
  double best_acc = -1;
  for (const auto& norm : cfg.norms)
    if (mean_of(agg[norm].acc) > best_acc) best_acc = mean_of(agg[norm].acc), best = norm;
  if (!best.empty()) md << "Highest mean final test accuracy: " << best << " (" << pct(best_acc) << "). ";
  std::string fastest;
  double fastest_steps = INFINITY;
  for (const auto& norm : cfg.norms) {
    const double s = mean_of(agg[norm].steps_to);
    if (agg[norm].reached == static_cast<int>(cfg.seeds.size()) && s < fastest_steps) fastest_steps = s, fastest = norm;
  }
  if (!fastest.empty())
    md << "Fastest to reach " << pct(cfg.target_accuracy) << " in every seed: " << fastest << " (" << fmt(fastest_steps, 5)
       << " steps on average). ";
  else
    md << "No norm reached " << pct(cfg.target_accuracy) << " in every seed. ";
  md << activation_reading(runs, cfg.norms) << grad_norm_reading(runs, cfg.norms);
  md << "Differences smaller than the seed std are noise.\n";
  Report rep{"Convergence: " + [&] {
               std::string s;
               for (size_t i = 0; i < cfg.norms.size(); ++i) s += (i ? " vs " : "") + cfg.norms[i];
               return s;
             }(), md.str()};
  write_file_atomic(ctx.out / "report.md", "# " + rep.title + "\n\nCommand: `" + ctx.command_line + "`\n\n" + rep.markdown);
  nlohmann::json conf = {{"study", "compare"}, {"base", to_json(cfg.base)}, {"norms", cfg.norms},
                         {"seeds", cfg.seeds}, {"target_accuracy", cfg.target_accuracy}};
  write_file_atomic(ctx.out / "manifest.json", manifest(ctx, conf, wall).dump(2) + "\n");
  return rep;
}

}  // namespace normlab::experiments
