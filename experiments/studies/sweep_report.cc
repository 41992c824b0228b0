// `normlab sweep`'s plots and report text (sweep_parts.h): accuracy against batch size or learning
// rate with seed intervals, BatchNorm's evaluations, and a reading computed from the numbers.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/models/archs.h"
#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/studies/sweep_parts.h"
#include "experiments/support/output.h"

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

// The BatchNorm evaluation gap: precise and test-batch accuracy minus EMA
// accuracy, in points, of each norm with batch statistics (named in the legend when there are
// several).
PlotSpec bn_gap_plot(const Plan& plan, const Points& pts) {
  PlotSpec gap{"BatchNorm evaluation gap: accuracy minus accuracy with running (EMA) statistics", "batch size",
               "accuracy difference (points)"};
  gap.log_x = 2;
  gap.error_bars = true;
  for (const std::string& bn : plan.bns) {
    const std::string who = plan.bns.size() > 1 ? display_name(bn) + ": " : "";
    Series pr{who + "precise BN - EMA"}, bs{who + "test-batch stats - EMA"};
    pr.style = precise_style(bn), bs.style = batch_stats_style(bn);
    for (const Point& p : pts.at(bn)) {
      std::vector<double> dp, db;
      for (size_t i = 0; i < p.acc.size(); ++i)
        dp.push_back(100 * (p.precise[i] - p.acc[i])), db.push_back(100 * (p.batch[i] - p.acc[i]));
      add_mean_point(pr, p.x, dp);
      add_mean_point(bs, p.x, db);
    }
    gap.series.push_back(pr);
    gap.series.push_back(bs);
  }
  return gap;
}

// How the lr follows the batch size, for the accuracy plot's title: "lr scaled linearly".
std::string lr_rule_title(LrScaling s) {
  return s == LrScaling::Linear ? "lr scaled linearly"
         : s == LrScaling::Sqrt ? "lr scaled by the square root of the batch"
                                : "the same lr at every batch";
}

}  // namespace

// Accuracy against the swept value, one line per norm (and BatchNorm's other two evaluations), and
// BatchNorm's evaluation gap; the titles' seed counts and intervals are added from the data.
std::vector<std::string> sweep_plots(const SweepConfig& cfg, const Plan& plan, const Points& pts,
                                     const StudyContext& ctx) {
  if (!gnuplot_available()) return {};
  PlotSpec acc{plan.by_batch ? "Final test accuracy vs batch size (" + lr_rule_title(cfg.lr_scaling) + ")"
                             : "Final test accuracy vs learning rate",
               plan.by_batch ? "batch size" : "learning rate", "final test accuracy (" + final_accuracy_rule(cfg.base.epochs) + ")"};
  acc.log_x = plan.by_batch ? 2 : 10;
  acc.error_bars = true;
  acc.percent_y = true;
  const auto is_bn = [&](const std::string& n) { return std::count(plan.bns.begin(), plan.bns.end(), n) > 0; };
  for (const auto& n : cfg.norms)
    acc.series.push_back(series_of(display_name(n) + (is_bn(n) ? " (running EMA stats)" : ""), norm_style(n),
                                   pts.at(n), &Point::acc));
  for (const std::string& bn : plan.bns) {
    acc.series.push_back(series_of(display_name(bn) + " (precise BN)", precise_style(bn), pts.at(bn), &Point::precise));
    acc.series.push_back(series_of(display_name(bn) + " (test-batch stats)", batch_stats_style(bn), pts.at(bn),
                                   &Point::batch));
  }
  const std::string acc_name = plan.by_batch ? "accuracy_vs_batch" : "accuracy_vs_lr";
  std::vector<std::string> plots;
  if (render_plot(acc, ctx.out, acc_name)) plots.push_back(acc_name);
  if (!plan.bns.empty() && render_plot(bn_gap_plot(plan, pts), ctx.out, "bn_eval_gap")) plots.push_back("bn_eval_gap");
  return plots;
}

namespace {

// The learning-rate rule as the report states it: "lr = 0.05 x batch / 128".
std::string lr_rule_text(const SweepConfig& cfg) {
  const std::string lr = fmt(cfg.base.lr), ref = std::to_string(cfg.reference_batch);
  switch (cfg.lr_scaling) {
    case LrScaling::Sqrt:
      return "lr = " + lr + " x sqrt(batch / " + ref + ") (the square-root scaling rule for adaptive optimizers "
             "such as Adam, Malladi et al. 2022)";
    case LrScaling::None: return "lr = " + lr + " at every batch size (not scaled)";
    case LrScaling::Linear: break;
  }
  return "lr = " + lr + " x batch / " + ref;
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
  for (const std::string& bn : plan.bns)
    md << " | " << display_name(bn) << ", precise BN | " << display_name(bn) << ", test-batch stats";
  md << " |\n|---";
  for (size_t i = 0; i < cfg.norms.size() + 2 * plan.bns.size(); ++i) md << "|---";
  md << "|\n";
  for (size_t i = 0; i < plan.points; ++i) {
    md << "| " << fmt(plan.x(cfg, i));
    for (const auto& n : cfg.norms) md << " | " << pm(pts.at(n)[i].acc, k);
    for (const std::string& bn : plan.bns)
      md << " | " << pm(pts.at(bn)[i].precise, k) << " | " << pm(pts.at(bn)[i].batch, k);
    md << " |\n";
  }
  return md.str();
}

// Each norm against its own best batch size (the highest mean): the batch sizes whose accuracy is
// distinguishably lower by Welch's t-test over seeds, with the difference and its interval, and
// those not distinguishable from it.
std::string norm_batch_reading(const std::string& n, const std::vector<Point>& v, size_t seeds) {
  std::vector<std::vector<double>> acc;
  std::vector<std::string> labels;
  for (const Point& p : v) acc.push_back(p.acc), labels.push_back(fmt(p.x));
  const Ranking r = rank_against_best(acc, kPercent);
  if (!r.found()) {
    const bool ran = std::any_of(v.begin(), v.end(), [](const Point& p) { return !p.acc.empty(); });
    return capitalized(display_name(n)) + (ran ? ": every run diverged. " : ": no finished run. ");
  }
  const Point& best = v[r.best()];
  return capitalized(display_name(n)) + ": highest mean " + accuracy_cell(best.acc) + "% at batch " + fmt(best.x) +
         points_against_best(r, labels, "below it", seeds) + ". ";
}

// At sweep point i: the norm with the highest mean accuracy, each other norm's difference to it
// (Welch), and those not distinguishable from it.
std::string norms_at(const SweepConfig& cfg, const Points& pts, size_t i) {
  std::vector<std::vector<double>> acc;
  for (const auto& n : cfg.norms) acc.push_back(pts.at(n)[i].acc);
  const Ranking r = rank_against_best(acc, kPercent);
  const std::string where = "At batch " + fmt(pts.at(cfg.norms[0])[i].x);
  if (!r.found()) return where + " no run finished. ";
  std::string md = where + " the highest mean is " + display_name(cfg.norms[r.best()]) + "'s (" +
                   accuracy_cell(acc[r.best()]) + "%)";
  std::vector<std::string> others, same;
  for (const Ranking::Other& o : r.others)
    if (o.finite) others.push_back(display_name(cfg.norms[o.index]) + " " + o.difference);
  for (size_t k = 1; k < r.tied.size(); ++k) same.push_back(display_name(cfg.norms[r.tied[k]]));
  if (!others.empty()) md += "; each other norm minus it: ";
  for (size_t k = 0; k < others.size(); ++k) md += (k ? "; " : "") + others[k];
  if (!same.empty())
    md += cfg.seeds.size() < 2 ? " (one seed: nothing tested)" : "; not distinguishable from it: " + join_names(same);
  return md + ". ";
}

// The accuracy with other statistics (`field`: precise or the test batches') minus that with
// running statistics, paired by run: "+1.20 ± 0.80 points at batch 4 (distinguishable from 0)";
// the mean of the per-seed differences with its 95% CI, distinguishable when it excludes 0.
std::string paired_gap(const Point& p, std::vector<double> Point::*field) {
  std::vector<double> d;
  for (size_t i = 0; i < p.acc.size(); ++i) d.push_back((p.*field)[i] - p.acc[i]);
  const MeanInterval m = mean_interval(d);
  if (m.n == 0) return "no finished run at batch " + fmt(p.x);
  const std::string sign = m.mean >= 0 ? "+" : "";
  std::string t = sign + interval_cell(d, kPercent) + " points at batch " + fmt(p.x);
  if (m.n < 2) return t + " (1 seed: not tested)";
  const bool apart = m.low() > 0 || m.high() < 0;
  return t + (apart ? " (distinguishable from 0)" : " (not distinguishable from 0 at n = " + std::to_string(m.n) + ")");
}

// A sequence model's sweep (ArchEntry::time_steps): the norms compared at the smallest and the
// largest batch (Welch), and each BatchNorm's test-batch minus running-statistics accuracy there.
std::string sequence_reading(const SweepConfig& cfg, const Plan& plan, const Points& pts) {
  const auto lo = std::min_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end());
  const auto hi = std::max_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end());
  std::vector<size_t> ends{size_t(lo - cfg.batch_sizes.begin())};
  if (hi != lo) ends.push_back(size_t(hi - cfg.batch_sizes.begin()));
  std::string md;
  for (size_t i : ends) md += norms_at(cfg, pts, i);
  for (const std::string& bn : plan.bns)
    for (const auto& [what, field] : {std::pair{"the test batches'", &Point::batch}, std::pair{"precise", &Point::precise}}) {
      md += capitalized(display_name(bn)) + ", accuracy with " + what + " statistics minus with running statistics "
            "(paired by seed: mean ± 95% CI of the differences): ";
      for (size_t k = 0; k < ends.size(); ++k) md += (k ? "; " : "") + paired_gap(pts.at(bn)[ends[k]], field);
      md += ". ";
    }
  return md;
}

std::string batch_reading(const SweepConfig& cfg, const Plan& plan, const Points& pts) {
  std::ostringstream md;
  for (const auto& n : cfg.norms) md << norm_batch_reading(n, pts.at(n), cfg.seeds.size());
  if (cfg.seeds.size() > 1) md << "Differences are means over seeds with their 95% interval; the test is Welch's t-test. ";
  md << "With a fixed number of epochs, larger batches take fewer steps. ";
  const size_t small = std::min_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end()) - cfg.batch_sizes.begin();
  for (const std::string& bn : plan.bns) {
    const Point& b = pts.at(bn)[small];
    if (std::isfinite(mean_of(b.acc)))
      md << "At batch " << cfg.batch_sizes[small] << ", " << display_name(bn) << " scores " << accuracy_cell(b.acc)
         << "% with running statistics, " << accuracy_cell(b.precise) << "% with precise statistics and "
         << accuracy_cell(b.batch) << "% with the statistics of test batches. ";
  }
  if (arch(cfg.base.model.arch).time_steps) md << sequence_reading(cfg, plan, pts);
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
     << (plan.by_batch ? lr_rule_text(cfg) : "batch " + std::to_string(b.batch_size))
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
