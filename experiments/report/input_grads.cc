// The gradient reaching each time step's input: seed means as plots, and report sentences whose
// every number and verdict comes from the recorded values.
#include "experiments/report/input_grads.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

namespace {

// One run's mean gradient at each time step over its recorded training steps: t -> mean.
std::map<int64_t, double> by_time_step(const RunResult& r) {
  std::map<int64_t, std::pair<double, int>> sums;
  for (const InputGradNorm& g : r.input_grads) {
    auto& s = sums[g.time_step];
    s.first += g.norm, s.second += 1;
  }
  std::map<int64_t, double> means;
  for (const auto& [t, s] : sums) means[t] = s.first / s.second;
  return means;
}

// Per seed of `norm`: log10 of the first time step's mean gradient, and log10(first / last).
struct Decades {
  std::vector<double> first, below_last;
};
Decades decades_of(const std::vector<RunResult>& runs, const std::string& norm) {
  Decades d;
  for (const RunResult& r : runs) {
    if (r.config.model.norm != norm || r.input_grads.empty()) continue;
    const auto m = by_time_step(r);
    const double first = m.begin()->second, last = m.rbegin()->second;
    d.first.push_back(first > 0 ? std::log10(first) : NAN);
    d.below_last.push_back(first > 0 && last > 0 ? std::log10(last / first) : NAN);
  }
  return d;
}

const Units kDecades{1, 2, " decades"};

// The last time step recorded (T).
int64_t t_last(const std::vector<RunResult>& runs) {
  int64_t t = 0;
  for (const RunResult& r : runs)
    for (const InputGradNorm& g : r.input_grads) t = std::max(t, g.time_step);
  return t;
}

}  // namespace

std::vector<std::pair<std::string, PlotSpec>> input_grad_plots(const std::vector<RunResult>& runs,
                                                               const std::vector<std::string>& norms) {
  PlotSpec first{"Gradient reaching the first time step's input", "training step",
                 "sqrt(B) ||dL/dX_1|| (L: batch mean loss)"};
  PlotSpec by_t{"Gradient reaching each time step's input (mean over training)", "time step t",
                "sqrt(B) ||dL/dX_t||"};
  first.log_y = by_t.log_y = LogY::if_wide;
  by_t.integer_x = by_t.error_bars = true;
  bool any = false;
  for (const std::string& n : norms) {
    std::map<int64_t, std::vector<double>> at_step, at_t;  // per-seed values
    for (const RunResult& r : runs) {
      if (r.config.model.norm != n) continue;
      for (const InputGradNorm& g : r.input_grads)
        if (g.time_step == 1) at_step[g.step].push_back(g.norm);
      for (const auto& [t, m] : by_time_step(r)) at_t[t].push_back(m);
    }
    Series a{display_name(n)}, b{display_name(n)};
    a.style = b.style = norm_style(n);
    for (const auto& [s, v] : at_step) add_mean_point(a, double(s), v);
    for (const auto& [t, v] : at_t) add_mean_point(b, double(t), v);
    any = any || !a.x.empty();
    first.series.push_back(a), by_t.series.push_back(b);
  }
  if (!any) return {};
  return {{"input_grad_first_step", first}, {"input_grad_by_time_step", by_t}};
}

std::string input_grad_reading(const std::vector<RunResult>& runs, const std::vector<std::string>& norms) {
  std::vector<std::string> shown;
  std::vector<Decades> d;
  for (const std::string& n : norms) {
    Decades x = decades_of(runs, n);
    if (std::isfinite(mean_of(x.first))) shown.push_back(n), d.push_back(std::move(x));
  }
  if (shown.empty()) return "";
  std::ostringstream md;
  md << "Gradient reaching the inputs: g_t = sqrt(B) ||dL/dX_t|| with L the batch's mean loss and X_t the "
        "batch's inputs at time step t (the root mean square over the batch of B dL/dx_t), averaged over the "
        "recorded training steps of each seed. Per norm, log10 g_1 at the first step (mean ± 95% CI over seeds; "
        "the geometric mean of g_1) and log10(g_T / g_1), the decades by which the first step's gradient is "
        "smaller than the last step's (T = " << t_last(runs) << "): ";
  for (size_t i = 0; i < shown.size(); ++i)
    md << (i ? "; " : "") << display_name(shown[i]) << " " << interval_cell(d[i].first, Units{1, 2, ""}) << " ("
       << fmt(std::pow(10, mean_of(d[i].first)), 3) << ") and " << interval_cell(d[i].below_last, Units{1, 2, ""});
  md << ". ";
  std::vector<std::vector<double>> first;
  for (const Decades& x : d) first.push_back(x.first);
  const std::vector<size_t> tied = tied_with_best(first);
  if (shown.size() < 2 || tied.empty()) return md.str();
  const size_t best = tied.front();
  md << "The most gradient reaches the first step with " << display_name(shown[best]) << "; each other norm minus it: ";
  bool sep = false;
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i == best) continue;
    md << (sep ? "; " : "") << display_name(shown[i]) << " " << difference_text(d[i].first, d[best].first, kDecades);
    sep = true;
  }
  md << ". ";
  if (tied.size() > 1) {
    std::vector<std::string> names;
    for (size_t i : tied) names.push_back(display_name(shown[i]));
    md << "Not distinguishable from the most (or one seed: not tested): " << join_names(names) << ". ";
  }
  return md.str();
}

}  // namespace normlab::experiments::report
