// `normlab sweep`: final test accuracy against batch size (learning rate scaled linearly from a
// reference batch, BatchNorm evaluated with EMA, precise and test-batch statistics) or against the
// learning rate, for each norm, mean and std over seeds.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/output.h"
#include "experiments/report/plot.h"
#include "experiments/records.h"
#include "experiments/registry.h"
#include "experiments/report/report.h"
#include "experiments/runs.h"
#include "experiments/report/stats.h"
#include "experiments/studies/study.h"
#include "experiments/report/tidy.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

std::string pm(const std::vector<double>& v) { return accuracy_cell(v); }

// The seeds' final accuracies of one norm at one sweep point.
struct Point {
  double x;
  std::vector<double> acc, precise, batch;
  int diverged = 0;
};
using Points = std::map<std::string, std::vector<Point>>;  // norm -> points in sweep order

// What the sweep needs besides its configuration: where it sweeps, and which norm (if any) is
// evaluated three ways.
struct Plan {
  bool by_batch;
  size_t points;
  std::string bn;  // the first norm with batch statistics in a batch-size sweep, else ""
  double x(const SweepConfig& c, size_t i) const { return by_batch ? double(c.batch_sizes[i]) : c.lrs[i]; }
};

Plan plan_of(const SweepConfig& cfg) {
  const bool by_batch = cfg.over == SweepOver::Batch;
  Plan p{by_batch, by_batch ? cfg.batch_sizes.size() : cfg.lrs.size(), ""};
  if (p.by_batch)
    for (const auto& n : cfg.norms)
      if (norm(n).batch_statistics && p.bn.empty()) p.bn = n;
  return p;
}

// Every configuration, validated before anything trains.
std::vector<CheckedRun> sweep_configs(const SweepConfig& cfg, const Plan& plan, const Splits& data) {
  if (cfg.norms.empty() || cfg.seeds.empty()) throw Error("sweep: needs at least one norm and one seed");
  if (plan.points == 0) throw Error(plan.by_batch ? "sweep: needs at least one batch size" : "sweep: needs at least one learning rate");
  if (cfg.reference_batch <= 0) throw Error("sweep: the reference batch must be positive");
  std::vector<CheckedRun> configs;
  for (const auto& n : cfg.norms)
    for (size_t i = 0; i < plan.points; ++i)
      for (uint64_t seed : cfg.seeds) {
        TrainConfig c = cfg.base;
        c.model.norm = n;
        c.seed = seed;
        if (plan.by_batch) {
          c.batch_size = cfg.batch_sizes[i];
          c.lr = cfg.base.lr * double(c.batch_size) / double(cfg.reference_batch);
        } else {
          c.lr = cfg.lrs[i];
        }
        c.bn_three_ways = plan.by_batch && norm(n).batch_statistics;
        c.eval_last = kFinalEpochs;
        c.loss_every = std::max<int64_t>(1, steps_per_run(c, data) / 200);
        configs.push_back(check_run(c, data));
      }
  return configs;
}

Points points_of(const SweepConfig& cfg, const Plan& plan, const std::vector<RunResult>& runs) {
  Points pts;
  for (const auto& n : cfg.norms)
    for (size_t i = 0; i < plan.points; ++i) pts[n].push_back(Point{plan.x(cfg, i)});
  for (const RunResult& r : runs) {
    const double x = plan.by_batch ? double(r.config.batch_size) : r.config.lr;
    for (Point& p : pts[r.config.model.norm])
      if (p.x == x) {
        p.acc.push_back(final_of(r, &EpochRecord::test_acc));
        p.precise.push_back(final_of(r, &EpochRecord::test_acc_precise));
        p.batch.push_back(final_of(r, &EpochRecord::test_acc_batch));
        if (r.diverged) ++p.diverged;
      }
  }
  return pts;
}

// runs.csv, epochs.csv and summary.csv.
void write_tables(const SweepConfig& cfg, const Plan& plan, const std::vector<RunResult>& runs, const Points& pts,
                  const StudyContext& ctx, bool has_val) {
  RunTable runs_csv({"diverged", "diverged_step", "final_test_acc", "final_test_acc_precise", "final_test_acc_batch",
                     "final_test_loss"},
                    ctx.dataset);
  RunTable epochs_csv(epoch_columns(has_val, true), ctx.dataset);
  for (const RunResult& r : runs) {
    runs_csv.add(r, {r.diverged ? "1" : "0", std::to_string(r.diverged_step), fmt(final_of(r, &EpochRecord::test_acc)),
                     fmt(final_of(r, &EpochRecord::test_acc_precise)), fmt(final_of(r, &EpochRecord::test_acc_batch)),
                     fmt(final_of(r, &EpochRecord::test_loss))});
    for (const auto& e : r.epochs) epochs_csv.add(r, epoch_cells(e, has_val, true));
  }
  CsvTable summary(std::vector<std::string>{"norm", plan.by_batch ? "batch_size" : "lr", "runs", "diverged",
                                            "test_acc_mean", "test_acc_std", "precise_acc_mean", "precise_acc_std",
                                            "batch_stats_acc_mean", "batch_stats_acc_std"});
  for (const auto& n : cfg.norms)
    for (const Point& p : pts.at(n))
      summary.add_row({n, fmt(p.x), std::to_string(p.acc.size()), std::to_string(p.diverged), fmt(mean_of(p.acc)),
                       fmt(std_of(p.acc)), fmt(mean_of(p.precise)), fmt(std_of(p.precise)), fmt(mean_of(p.batch)),
                       fmt(std_of(p.batch))});
  runs_csv.write(ctx.out / "runs.csv");
  epochs_csv.write(ctx.out / "epochs.csv");
  summary.write(ctx.out / "summary.csv");
}

// A series of the mean over seeds of each point's values, with the 95% CI of that mean (2+ seeds).
Series series_of(const std::string& name, Style style, const std::vector<Point>& pts, std::vector<double> Point::*field) {
  Series s{name};
  s.style = style;
  for (const Point& p : pts) add_mean_point(s, p.x, p.*field);
  return s;
}

// The styles of BatchNorm evaluated with precise statistics and with the test batches' own: the
// norm's colour, dashed or dash-dotted, with open markers (its running-statistics curve: solid, filled).
Style precise_style(const std::string& bn) { return {norm_style(bn).color, 6, 2}; }
Style batch_stats_style(const std::string& bn) { return {norm_style(bn).color, 4, 4}; }

// The BatchNorm evaluation gap: precise and test-batch accuracy minus EMA accuracy, in points.
PlotSpec bn_gap_plot(const std::string& bn, const std::vector<Point>& pts) {
  PlotSpec gap{"BatchNorm evaluation gap: accuracy minus accuracy with running (EMA) statistics", "batch size",
               "accuracy difference (points)"};
  gap.log_x = 2;
  gap.error_bars = true;
  Series pr{"precise BN - EMA"}, bs{"test-batch stats - EMA"};
  pr.style = precise_style(bn), bs.style = batch_stats_style(bn);
  for (const Point& p : pts) {
    std::vector<double> dp, db;
    for (size_t i = 0; i < p.acc.size(); ++i) dp.push_back(100 * (p.precise[i] - p.acc[i])), db.push_back(100 * (p.batch[i] - p.acc[i]));
    add_mean_point(pr, p.x, dp);
    add_mean_point(bs, p.x, db);
  }
  gap.series = {pr, bs};
  return gap;
}

// Accuracy against the swept value, one line per norm (and BatchNorm's other two evaluations), and
// BatchNorm's evaluation gap; the titles' seed counts and intervals are added from the data.
std::vector<std::string> sweep_plots(const SweepConfig& cfg, const Plan& plan, const Points& pts,
                                     const StudyContext& ctx) {
  if (!gnuplot_available()) return {};
  PlotSpec acc{plan.by_batch ? "Final test accuracy vs batch size (lr scaled linearly)"
                             : "Final test accuracy vs learning rate",
               plan.by_batch ? "batch size" : "learning rate", "final test accuracy (" + final_accuracy_rule(cfg.base.epochs) + ")"};
  acc.log_x = plan.by_batch ? 2 : 10;
  acc.error_bars = true;
  acc.percent_y = true;
  for (const auto& n : cfg.norms)
    acc.series.push_back(series_of(display_name(n) + (n == plan.bn ? " (running EMA stats)" : ""), norm_style(n),
                                   pts.at(n), &Point::acc));
  if (!plan.bn.empty()) {
    acc.series.push_back(series_of(display_name(plan.bn) + " (precise BN)", precise_style(plan.bn), pts.at(plan.bn), &Point::precise));
    acc.series.push_back(series_of(display_name(plan.bn) + " (test-batch stats)", batch_stats_style(plan.bn),
                                   pts.at(plan.bn), &Point::batch));
  }
  const std::string acc_name = plan.by_batch ? "accuracy_vs_batch" : "accuracy_vs_lr";
  std::vector<std::string> plots;
  if (render_plot(acc, ctx.out, acc_name)) plots.push_back(acc_name);
  if (!plan.bn.empty() && render_plot(bn_gap_plot(plan.bn, pts.at(plan.bn)), ctx.out, "bn_eval_gap")) plots.push_back("bn_eval_gap");
  return plots;
}

// The results table: one row per sweep point, one column per norm (and BatchNorm's other two).
std::string results_table(const SweepConfig& cfg, const Plan& plan, const Points& pts) {
  std::ostringstream md;
  md << "| " << (plan.by_batch ? "batch" : "lr");
  for (const auto& n : cfg.norms) md << " | " << display_name(n);
  if (!plan.bn.empty()) md << " | " << display_name(plan.bn) << ", precise BN | " << display_name(plan.bn) << ", test-batch stats";
  md << " |\n|---";
  for (size_t i = 0; i < cfg.norms.size() + (plan.bn.empty() ? 0 : 2); ++i) md << "|---";
  md << "|\n";
  for (size_t i = 0; i < plan.points; ++i) {
    md << "| " << fmt(plan.x(cfg, i));
    for (const auto& n : cfg.norms) md << " | " << pm(pts.at(n)[i].acc);
    if (!plan.bn.empty()) md << " | " << pm(pts.at(plan.bn)[i].precise) << " | " << pm(pts.at(plan.bn)[i].batch);
    md << " |\n";
  }
  return md.str();
}

// Each norm against its own best batch size: the batch sizes where its mean accuracy falls more
// than twice the larger seed std (and at least 0.5 points) below that best.
std::string batch_reading(const SweepConfig& cfg, const Plan& plan, const Points& pts) {
  std::ostringstream md;
  for (const auto& n : cfg.norms) {
    const auto& v = pts.at(n);
    size_t best = 0;
    for (size_t i = 0; i < plan.points; ++i)
      if (mean_of(v[i].acc) > mean_of(v[best].acc) || !std::isfinite(mean_of(v[best].acc))) best = i;
    if (!std::isfinite(mean_of(v[best].acc))) {
      const bool ran = std::any_of(v.begin(), v.end(), [](const Point& p) { return !p.acc.empty(); });
      md << display_name(n) << (ran ? ": every run diverged. " : ": no finished run. ");
      continue;
    }
    md << display_name(n) << ": best " << fmt(100 * mean_of(v[best].acc), 4) << "% at batch " << cfg.batch_sizes[best];
    std::string worse;
    for (size_t i = 0; i < plan.points; ++i) {
      if (v[i].acc.empty()) continue;  // not run (interrupted)
      const double gap = 100 * (mean_of(v[best].acc) - mean_of(v[i].acc));
      const double noise = 100 * std::max(std_of(v[best].acc), std_of(v[i].acc));
      if (!std::isfinite(gap))
        worse += (worse.empty() ? "" : ", ") + std::to_string(cfg.batch_sizes[i]) + " (diverged)";
      else if (gap > std::max(2 * noise, 0.5))
        worse += (worse.empty() ? "" : ", ") + std::to_string(cfg.batch_sizes[i]) + " (" + fmt(100 * mean_of(v[i].acc), 4) + "%)";
    }
    md << (worse.empty() ? "; every other batch size is within twice the seed std (or 0.5 points) of it. "
                         : "; more than twice the seed std below it at batch " + worse + ". ");
  }
  md << "With a fixed number of epochs, larger batches take fewer steps. ";
  if (!plan.bn.empty()) {
    const size_t small = std::min_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end()) - cfg.batch_sizes.begin();
    const Point& b = pts.at(plan.bn)[small];
    if (std::isfinite(mean_of(b.acc)))
      md << "At batch " << cfg.batch_sizes[small] << ", " << display_name(plan.bn) << " scores "
         << fmt(100 * mean_of(b.acc), 4) << "% with running statistics, " << fmt(100 * mean_of(b.precise), 4)
         << "% with precise statistics and " << fmt(100 * mean_of(b.batch), 4)
         << "% with the statistics of test batches. ";
  }
  return md.str();
}

std::string lr_reading(const SweepConfig& cfg, const Points& pts) {
  std::ostringstream md;
  for (const auto& n : cfg.norms) {
    double best = -1, best_lr = NAN;
    int div = 0;
    for (const Point& p : pts.at(n)) {
      if (mean_of(p.acc) > best) best = mean_of(p.acc), best_lr = p.x;
      div += p.diverged;
    }
    if (!std::isfinite(best_lr)) md << display_name(n) << ": every run diverged. ";
    else
      md << display_name(n) << ": best " << fmt(100 * best, 4) << "% at lr " << fmt(best_lr) << ", " << div
         << " diverged run(s). ";
  }
  return md.str();
}

std::string sweep_markdown(const SweepConfig& cfg, const Plan& plan, const Points& pts, const StudyContext& ctx,
                           const std::vector<std::string>& plots) {
  const TrainConfig& b = cfg.base;
  std::ostringstream md;
  md << "Model " << describe(b.model) << " (" << b.model.activation << "), data: " << ctx.dataset << ", "
     << count_of(b.epochs, "epoch") << " per run, " << optimizer_text(b, false) << ", "
     << (plan.by_batch ? "lr = " + fmt(b.lr) + " x batch / " + std::to_string(cfg.reference_batch)
                       : "batch " + std::to_string(b.batch_size))
     << ", schedule " << b.schedule << " with " << count_of(b.warmup_steps, "warmup step") << ", "
     << count_of(static_cast<int64_t>(cfg.seeds.size()), "seed") << ". Final accuracy = "
     << final_accuracy_rule(b.epochs) << "; " << (cfg.seeds.size() > 1 ? "mean ± std over seeds, " : "") << "in %.\n\n";
  md << results_table(cfg, plan, pts) << "\n" << image_links(plots) << "**Reading.** ";
  if (plan.by_batch && plan.points >= 2) md << batch_reading(cfg, plan, pts);
  else if (!plan.by_batch) md << lr_reading(cfg, pts);
  md << "\n";
  return md.str();
}

// The manifest, with where the time went per run (not in the CSVs: they stay byte-identical).
nlohmann::json sweep_manifest(const SweepConfig& cfg, const std::vector<RunResult>& runs, const StudyContext& ctx,
                              double wall) {
  nlohmann::json base = to_json(cfg.base);
  base["eval_last"] = kFinalEpochs;
  nlohmann::json man = manifest(ctx,
                                {{"study", "sweep"}, {"over", sweep_over_name(cfg.over)}, {"base", base}, {"batch_sizes", cfg.batch_sizes},
                                 {"lrs", cfg.lrs}, {"reference_batch", cfg.reference_batch}, {"norms", cfg.norms},
                                 {"seeds", cfg.seeds}},
                                wall);
  nlohmann::json timing = nlohmann::json::array();
  for (const RunResult& r : runs)
    timing.push_back({{"norm", r.config.model.norm}, {"batch_size", r.config.batch_size}, {"lr", r.config.lr},
                      {"seed", r.config.seed}, {"steps", r.total_steps}, {"seconds", r.seconds}, {"cpu_seconds", r.cpu_seconds},
                      {"step_seconds", r.step_seconds}, {"data_seconds", r.data_seconds},
                      {"stats_seconds", r.stats_seconds}, {"eval_seconds", r.eval_seconds},
                      {"bn_eval_seconds", r.bn_eval_seconds}});
  man["run_timing"] = timing;
  return man;
}

std::string outcome(const RunResult& r) {
  std::string msg;
  if (r.diverged) msg = "diverged at step " + std::to_string(r.diverged_step);
  else {
    msg = "test accuracy " + fmt(100 * final_of(r, &EpochRecord::test_acc), 4) + "%";
    if (r.config.bn_three_ways)
      msg += " (precise BN " + fmt(100 * final_of(r, &EpochRecord::test_acc_precise), 4) + "%, test-batch stats " +
             fmt(100 * final_of(r, &EpochRecord::test_acc_batch), 4) + "%)";
  }
  return msg + ", " + fmt(r.seconds, 3) + " s";
}

}  // namespace

double final_of(const RunResult& r, double EpochRecord::*field) {
  if (r.diverged || r.epochs.empty()) return NAN;
  std::vector<double> v;
  const size_t n = r.epochs.size(), k = kFinalEpochs;
  for (size_t i = n >= k ? n - k : 0; i < n; ++i) v.push_back(r.epochs[i].*field);
  return median_of(v);
}

std::string accuracy_cell(const std::vector<double>& v) {
  if (v.empty()) return "not run";  // an interrupted sweep
  if (!std::isfinite(mean_of(v))) return "diverged";
  return fmt(100 * mean_of(v), 4) + (v.size() > 1 ? " ± " + fmt(100 * std_of(v), 2) : "");  // one seed: no std
}

std::string sweep_over_name(SweepOver over) { return over == SweepOver::Batch ? "batch" : "lr"; }

std::vector<CheckedRun> sweep_runs(const SweepConfig& cfg, const Splits& data) {
  return sweep_configs(cfg, plan_of(cfg), data);
}

Report run_sweep(const SweepConfig& cfg, const Splits& data, const StudyContext& ctx) {
  return run_sweep(cfg, sweep_runs(cfg, data), data, ctx);
}

Report run_sweep(const SweepConfig& cfg, const std::vector<CheckedRun>& configs, const Splits& data,
                 const StudyContext& ctx) {
  const Plan plan = plan_of(cfg);
  prepare_output_dir(ctx.out);
  const Runs runs = run_all(
      configs, data, ctx.quiet,
      [](const TrainConfig& c) {
        return "sweep: norm " + c.model.norm + ", batch " + std::to_string(c.batch_size) + ", lr " + fmt(c.lr, 4) +
               ", seed " + std::to_string(c.seed);
      },
      outcome, previous_runs(ctx.resume_from));
  const Points pts = points_of(cfg, plan, runs.results);
  write_tables(cfg, plan, runs.results, pts, ctx, data.validation.size() > 0);
  write_records(ctx.out / "records.json", runs.results);
  Report rep{plan.by_batch ? "Batch-size sensitivity" : "Learning-rate sensitivity",
             interrupted_note(runs, "sweep") + sweep_markdown(cfg, plan, pts, ctx, sweep_plots(cfg, plan, pts, ctx))};
  if (plan.by_batch)
    for (const auto& [n, points] : pts)
      for (const Point& p : points) rep.sweep_accuracy[n].emplace_back(p.x, mean_of(p.acc));
  nlohmann::json man = sweep_manifest(cfg, runs.results, ctx, runs.wall_seconds);
  record_progress(man, rep, runs);
  write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments::studies
