// `normlab sweep`: final test accuracy against batch size (learning rate scaled linearly from a
// reference batch, BatchNorm evaluated with EMA, precise and test-batch statistics) or against the
// learning rate, for each norm: the mean over seeds with its 95% interval, differences tested.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/archs.h"
#include "experiments/output.h"
#include "experiments/report/plot.h"
#include "experiments/records.h"
#include "experiments/registry.h"
#include "experiments/report/claims.h"
#include "experiments/report/report.h"
#include "experiments/runs.h"
#include "experiments/report/stats.h"
#include "experiments/studies/study.h"
#include "experiments/report/tidy.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

// The seeds' final accuracies of one norm at one sweep point (NaN for a run that diverged).
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

// A batch sweep's warmup at batch b: base.warmup_steps at the reference batch, scaled so that it
// covers the same number of samples (the same fraction of the run) at every batch size:
// round(warmup x reference / b), at least 1 step when there is a warmup.
int64_t scaled_warmup(const SweepConfig& cfg, int64_t b) {
  if (cfg.base.warmup_steps <= 0) return 0;
  return std::max<int64_t>(1, std::llround(double(cfg.base.warmup_steps) * double(cfg.reference_batch) / double(b)));
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
          c.warmup_steps = scaled_warmup(cfg, c.batch_size);
        } else {
          c.lr = cfg.lrs[i];
        }
        c.bn_three_ways = plan.by_batch && norm(n).batch_statistics;
        c.eval_last = 1;  // the final score is the last epoch's
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
  // Per norm and point: the runs, how many diverged, and each evaluation's mean over the seeds
  // with its std, standard error and 95% interval (n: the runs that did not diverge).
  std::vector<std::string> header{"norm", plan.by_batch ? "batch_size" : "lr", "runs", "diverged"};
  for (const char* e : {"test_acc", "precise_acc", "batch_stats_acc"})
    for (auto& c : interval_columns(e)) header.push_back(c);
  CsvTable summary(header);
  for (const auto& n : cfg.norms)
    for (const Point& p : pts.at(n)) {
      std::vector<std::string> row{n, fmt(p.x), std::to_string(p.acc.size()), std::to_string(p.diverged)};
      for (const auto* v : {&p.acc, &p.precise, &p.batch})
        for (auto& c : interval_values(*v)) row.push_back(c);
      summary.add_row(row);
    }
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

// A results cell: mean ± 95% CI in %, with its n when fewer runs than seeds count (diverged, not run).
std::string pm(const std::vector<double>& v, size_t seeds) {
  const int64_t n = mean_interval(v).n;  // the runs that did not diverge
  return accuracy_cell(v) + (n > 0 && static_cast<size_t>(n) < seeds ? " (n = " + std::to_string(n) + ")" : "");
}

// The results table: one row per sweep point, one column per norm (and BatchNorm's other two).
std::string results_table(const SweepConfig& cfg, const Plan& plan, const Points& pts) {
  const size_t k = cfg.seeds.size();
  std::ostringstream md;
  md << "| " << (plan.by_batch ? "batch" : "lr");
  for (const auto& n : cfg.norms) md << " | " << display_name(n);
  if (!plan.bn.empty()) md << " | " << display_name(plan.bn) << ", precise BN | " << display_name(plan.bn) << ", test-batch stats";
  md << " |\n|---";
  for (size_t i = 0; i < cfg.norms.size() + (plan.bn.empty() ? 0 : 2); ++i) md << "|---";
  md << "|\n";
  for (size_t i = 0; i < plan.points; ++i) {
    md << "| " << fmt(plan.x(cfg, i));
    for (const auto& n : cfg.norms) md << " | " << pm(pts.at(n)[i].acc, k);
    if (!plan.bn.empty()) md << " | " << pm(pts.at(plan.bn)[i].precise, k) << " | " << pm(pts.at(plan.bn)[i].batch, k);
    md << " |\n";
  }
  return md.str();
}

// Each norm against its own best batch size (the highest mean): the batch sizes whose accuracy is
// distinguishably lower by Welch's t-test over seeds, with the difference and its interval, and
// those not distinguishable from it.
std::string norm_batch_reading(const std::string& n, const std::vector<Point>& v, size_t seeds) {
  std::vector<std::vector<double>> acc;
  for (const Point& p : v) acc.push_back(p.acc);
  const std::vector<size_t> tied = tied_with_best(acc);
  if (tied.empty()) {
    const bool ran = std::any_of(v.begin(), v.end(), [](const Point& p) { return !p.acc.empty(); });
    return capitalized(display_name(n)) + (ran ? ": every run diverged. " : ": no finished run. ");
  }
  const Point& best = v[tied.front()];
  std::string md = capitalized(display_name(n)) + ": highest mean " + accuracy_cell(best.acc) + "% at batch " + fmt(best.x);
  std::vector<std::string> lower, same;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == tied.front() || v[i].acc.empty()) continue;  // the best; not run (interrupted)
    if (!std::isfinite(mean_of(v[i].acc))) lower.push_back("batch " + fmt(v[i].x) + " diverged");
    else if (std::find(tied.begin(), tied.end(), i) == tied.end())
      lower.push_back("batch " + fmt(v[i].x) + " " + difference_text(v[i].acc, best.acc, kPercent));
    else same.push_back(fmt(v[i].x));
  }
  if (!lower.empty()) {
    md += "; distinguishably below it: ";
    for (size_t i = 0; i < lower.size(); ++i) md += (i ? "; " : "") + lower[i];
  }
  if (!same.empty())
    md += seeds < 2 ? "; with one seed, no difference from batch " + join_names(same) + " is tested"
                    : "; not distinguishable from it at batch " + join_names(same);
  return md + ". ";
}

std::string batch_reading(const SweepConfig& cfg, const Plan& plan, const Points& pts) {
  std::ostringstream md;
  for (const auto& n : cfg.norms) md << norm_batch_reading(n, pts.at(n), cfg.seeds.size());
  if (cfg.seeds.size() > 1) md << "Differences are means over seeds with their 95% interval; the test is Welch's t-test. ";
  md << "With a fixed number of epochs, larger batches take fewer steps. ";
  if (!plan.bn.empty()) {
    const size_t small = std::min_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end()) - cfg.batch_sizes.begin();
    const Point& b = pts.at(plan.bn)[small];
    if (std::isfinite(mean_of(b.acc)))
      md << "At batch " << cfg.batch_sizes[small] << ", " << display_name(plan.bn) << " scores "
         << accuracy_cell(b.acc) << "% with running statistics, " << accuracy_cell(b.precise)
         << "% with precise statistics and " << accuracy_cell(b.batch)
         << "% with the statistics of test batches. ";
  }
  return md.str();
}

// Each norm's best learning rates: the highest mean and those not distinguishable from it.
std::string lr_reading(const SweepConfig& cfg, const Points& pts) {
  std::ostringstream md;
  for (const auto& n : cfg.norms) {
    std::vector<std::vector<double>> acc;
    int div = 0;
    for (const Point& p : pts.at(n)) acc.push_back(p.acc), div += p.diverged;
    const std::vector<size_t> tied = tied_with_best(acc);
    if (tied.empty()) {
      md << capitalized(display_name(n)) << ": every run diverged. ";
      continue;
    }
    const Point& best = pts.at(n)[tied.front()];
    md << capitalized(display_name(n)) << ": highest mean " << accuracy_cell(best.acc) << "% at lr " << fmt(best.x);
    std::vector<std::string> same;
    for (size_t i = 1; i < tied.size(); ++i) same.push_back(fmt(pts.at(n)[tied[i]].x));
    if (!same.empty())
      md << (cfg.seeds.size() < 2 ? " (one seed: not tested against lr " : " (not distinguishable from lr ")
         << join_names(same) << ")";
    md << ", " << div << " diverged run(s). ";
  }
  return md.str();
}

std::string sweep_markdown(const SweepConfig& cfg, const Plan& plan, const Points& pts, const StudyContext& ctx,
                           const std::vector<std::string>& plots) {
  const TrainConfig& b = cfg.base;
  std::ostringstream md;
  md << "Model " << model_text(b.model) << ", data: " << ctx.dataset << ", "
     << count_of(b.epochs, "epoch") << " per run, " << optimizer_text(b, false) << ", "
     << (plan.by_batch ? "lr = " + fmt(b.lr) + " x batch / " + std::to_string(cfg.reference_batch)
                       : "batch " + std::to_string(b.batch_size))
     << ", schedule " << b.schedule << " with "
     << (plan.by_batch && b.warmup_steps > 0
             ? "a linear warmup of " + count_of(b.warmup_steps, "step") + " at batch " + std::to_string(cfg.reference_batch) +
                   ", scaled to cover the same " + std::to_string(b.warmup_steps * cfg.reference_batch) +
                   " samples at every batch size (round(" + std::to_string(b.warmup_steps) + " x " +
                   std::to_string(cfg.reference_batch) + " / batch) steps)"
             : count_of(b.warmup_steps, "warmup step"))
     << ", " << count_of(static_cast<int64_t>(cfg.seeds.size()), "seed") << ". Final accuracy = "
     << final_accuracy_rule(b.epochs) << "; "
     << (cfg.seeds.size() > 1 ? "mean ± 95% confidence interval over n = " + std::to_string(cfg.seeds.size()) +
                                    " seeds (Student t; a cell with fewer says its n), "
                              : "one seed: no interval, ")
     << "in %.\n\n";
  if (!ctx.defaults_note.empty()) md << ctx.defaults_note << "\n\n";
  md << norm_notes(cfg.norms);
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
  base["eval_last"] = 1;
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
  return final_epoch(r).*field;
}

std::string accuracy_cell(const std::vector<double>& v) {
  return interval_cell(v, kPercent);
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
  RunJournal journal(ctx.out / kJournal, ctx.settings);
  const Runs runs = run_all(
      configs, data, ctx.quiet,
      [](const TrainConfig& c) {
        return "sweep: norm " + c.model.norm + ", batch " + std::to_string(c.batch_size) + ", lr " + fmt(c.lr, 4) +
               ", seed " + std::to_string(c.seed);
      },
      outcome, previous_runs(ctx.resume_from, ctx.resume_killed), 1, &journal);
  const Points pts = points_of(cfg, plan, runs.results);
  write_tables(cfg, plan, runs.results, pts, ctx, data.validation.size() > 0);
  write_records(ctx.out / "records.json", runs.results);
  Report rep{plan.by_batch ? "Batch-size sensitivity" : "Learning-rate sensitivity",
             interrupted_note(runs, "sweep") + sweep_markdown(cfg, plan, pts, ctx, sweep_plots(cfg, plan, pts, ctx))};
  if (plan.by_batch)
    for (const auto& [n, points] : pts)
      for (const Point& p : points) rep.sweep_accuracy[n].emplace_back(p.x, p.acc);
  nlohmann::json man = sweep_manifest(cfg, runs.results, ctx, runs.wall_seconds);
  record_progress(man, rep, runs);
  write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments::studies
