// `normlab sweep`'s plots and report text (sweep_parts.h): accuracy against batch size or learning
// rate with seed intervals, BatchNorm's evaluations, and a reading computed from the numbers.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/archs.h"
#include "experiments/output.h"
#include "experiments/registry.h"
#include "experiments/report/claims.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/studies/sweep_parts.h"

namespace normlab::experiments::studies::sweep_parts {

using namespace report;  // the tables, plots and report text every study writes

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace normlab::experiments::studies::sweep_parts
