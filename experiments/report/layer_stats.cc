// Activation statistics and gradient norms of the comparison: seed means as plot panels, and
// report sentences whose every number and verdict comes from the recorded values.
#include "experiments/report/layer_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "base/error.h"
#include "experiments/models/archs.h"
#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/stats.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

namespace {

// Seed means over steps: step -> the values of every run at that step, averaged (with the number
// of seeds, for the title; no interval: the panels' curves are dense and many).
Series seed_mean(const std::string& name, const std::map<int64_t, std::vector<double>>& by_step, Style style) {
  Series s{name};
  s.style = style;
  for (const auto& [step, v] : by_step) {
    const MeanInterval m = mean_interval(v);
    s.x.push_back(double(step)), s.y.push_back(m.mean), s.n.push_back(m.n);
  }
  return s;
}

// The name of each weight matrix of the runs' model, in the model's order (archs.h weight_names):
// "Conv2d 1", "Conv2d 2", "output Linear" for a CNN; "Linear 1", "Linear 2", "output Linear" for an
// MLP; the LSTM's input-to-hidden and hidden-to-hidden matrices per layer, then "output Linear".
// Empty when they cannot be named.
std::vector<std::string> weighted_layer_names(const std::vector<RunResult>& runs) {
  if (runs.empty()) return {};
  try {
    return weight_names(runs.front().config.model);
  } catch (const Error&) {
    return {};
  }
}

// The position of each weight matrix among a run's weight matrices (0: first Linear), by the
// parameter name it has in that run ("0.weight", "3.weight", ...: names depend on the norm).
std::map<std::string, int> weight_positions(const RunResult& r) {
  std::map<std::string, int> pos;
  for (const GradNorm& g : r.grad_norms)
    if (!pos.count(g.param)) pos.emplace(g.param, static_cast<int>(pos.size()));
  return pos;
}

int count_weights(const std::vector<RunResult>& runs) {
  size_t n = 0;
  for (const RunResult& r : runs) n = std::max(n, weight_positions(r).size());
  return static_cast<int>(n);
}

// The panel name of weight i of n: its layer's name when the model's layer list has n weighted
// layers, else its position ("weight 2 of 3").
std::string weight_name(const std::vector<std::string>& layers, int i, int n) {
  if (static_cast<int>(layers.size()) == n) return layers[static_cast<size_t>(i)] + " weight";
  return "weight " + std::to_string(i + 1) + " of " + std::to_string(n);
}

// The gradient norms of weight matrix `w` in the runs of `norm`, by step.
std::map<int64_t, std::vector<double>> grad_norms_of(const std::vector<RunResult>& runs, const std::string& norm,
                                                     int w) {
  std::map<int64_t, std::vector<double>> by_step;
  for (const RunResult& r : runs) {
    if (r.config.model.norm != norm) continue;
    const auto pos = weight_positions(r);
    for (const GradNorm& g : r.grad_norms)
      if (pos.at(g.param) == w) by_step[g.step].push_back(g.norm);
  }
  return by_step;
}

}  // namespace

std::vector<PlotSpec> activation_panels(const std::vector<RunResult>& runs, const std::vector<std::string>& norms) {
  int layers = 0;
  for (const RunResult& r : runs)
    for (const ActivationStat& a : r.activations) layers = std::max(layers, a.layer + 1);
  // Hidden layer k is opened by the model's k-th weighted layer: its output is measured (before
  // the norm), then the norm's.
  const std::vector<std::string> names = weighted_layer_names(runs);
  std::vector<PlotSpec> panels;
  for (int layer = 0; layer < layers; ++layer)
    for (const bool is_std : {false, true}) {
      const std::string stat = is_std ? "std" : "mean";
      const std::string where = layer + 1 < static_cast<int>(names.size()) ? names[static_cast<size_t>(layer)]
                                                                          : "Hidden layer " + std::to_string(layer + 1);
      PlotSpec p{where + ": " + stat + " of the activations", "step", stat};
      p.log_y = is_std ? LogY::if_wide : LogY::off;
      p.dense = true;
      for (size_t k = 0; k < norms.size(); ++k) {
        std::map<int64_t, std::vector<double>> pre, post;
        for (const RunResult& r : runs) {
          if (r.config.model.norm != norms[k]) continue;
          for (const ActivationStat& a : r.activations)
            if (a.layer == layer && (a.where == "pre" || a.where == "post"))
              (a.where == "pre" ? pre : post)[a.step].push_back(is_std ? a.std : a.mean);
        }
        const Style post_style = norm_style(norms[k]);
        Style pre_style = post_style;
        pre_style.dash = 2;
        const NormEntry& n = norm(norms[k]);
        if (n.is_identity()) {  // before = after: one line
          if (!pre.empty()) p.series.push_back(seed_mean(n.display, pre, post_style));
          continue;
        }
        if (!pre.empty()) p.series.push_back(seed_mean(n.display + ", before the norm", pre, pre_style));
        if (!post.empty()) p.series.push_back(seed_mean(n.display + ", after the norm", post, post_style));
      }
      if (!p.series.empty()) panels.push_back(p);
    }
  return panels;
}

std::vector<PlotSpec> grad_norm_panels(const std::vector<RunResult>& runs, const std::vector<std::string>& norms) {
  const int n = count_weights(runs);
  const std::vector<std::string> names = weighted_layer_names(runs);
  std::vector<PlotSpec> panels;
  for (int w = 0; w < n; ++w) {
    PlotSpec p{"Gradient norm: " + weight_name(names, w, n), "step", "gradient norm (L2)"};
    p.log_y = LogY::if_wide;
    p.dense = true;
    for (const std::string& name : norms) {
      const auto by_step = grad_norms_of(runs, name, w);
      if (!by_step.empty()) p.series.push_back(seed_mean(norm(name).display, by_step, norm_style(name)));
    }
    if (!p.series.empty()) panels.push_back(p);
  }
  return panels;
}

std::string activation_reading(const std::vector<RunResult>& runs, const std::vector<std::string>& norms, double tol) {
  std::ostringstream md;
  for (const std::string& name : norms) {
    const NormEntry& n = norm(name);
    const std::string where = n.is_identity() ? "pre" : "post";
    std::vector<double> abs_mean, std_dev;  // |mean| and |std - 1| of every record
    double lo = INFINITY, hi = -INFINITY;
    for (const RunResult& r : runs) {
      if (r.config.model.norm != name) continue;
      for (const ActivationStat& a : r.activations) {
        if (a.where != where || !std::isfinite(a.mean) || !std::isfinite(a.std)) continue;
        abs_mean.push_back(std::fabs(a.mean)), std_dev.push_back(std::fabs(a.std - 1));
        lo = std::min(lo, a.std), hi = std::max(hi, a.std);
      }
    }
    if (abs_mean.empty()) continue;
    const double max_abs_mean = *std::max_element(abs_mean.begin(), abs_mean.end());
    const std::string range = "|mean| " + fmt(mean_of(abs_mean), 2) + " on average and at most " +
                              fmt(max_abs_mean, 2) + ", std from " + fmt(lo, 3) + " to " + fmt(hi, 3);
    if (n.is_identity()) {
      md << "Without a norm, the hidden pre-activations have " << range << ". ";
      continue;
    }
    const bool centred = max_abs_mean <= tol, unit = lo >= 1 - tol && hi <= 1 + tol;
    md << "With " << n.display << ", the norm's output (after its learned scale and shift) ";
    if (centred && unit)
      md << "stays within " << fmt(tol) << " of zero mean and unit std at every recorded step, layer and seed";
    else
      md << "leaves " << (centred ? "" : "zero mean") << (centred || unit ? "" : " and ") << (unit ? "" : "unit std")
         << " by more than " << fmt(tol) << " at some recorded step or layer";
    md << " (" << range << "; |std - 1| " << fmt(mean_of(std_dev), 2) << " on average). ";
  }
  return md.str();
}

std::string grad_norm_reading(const std::vector<RunResult>& runs, const std::vector<std::string>& norms) {
  const int n = count_weights(runs);
  if (n == 0) return "";
  // Per run (seed) of a norm: the mean gradient norm of weight w over its recorded steps.
  auto per_seed = [&](const std::string& name, int w) {
    std::vector<double> v;
    for (const RunResult& r : runs) {
      if (r.config.model.norm != name || r.grad_norms.empty()) continue;
      const auto pos = weight_positions(r);
      std::vector<double> all;
      for (const GradNorm& g : r.grad_norms)
        if (pos.at(g.param) == w) all.push_back(g.norm);
      v.push_back(mean_of(all));
    }
    return v;
  };
  std::ostringstream md;
  const ArchEntry& a = arch(runs.front().config.model.arch);
  const std::vector<std::string> names = weighted_layer_names(runs);
  const std::string first_weight = a.weight_names && !names.empty() ? names.front() : a.image ? "first Conv2d" : "first Linear";
  md << "Gradient norms, mean over recorded steps and seeds (" << first_weight << " / output Linear weight): ";
  std::string largest, smallest;
  std::vector<double> hi_v, lo_v;
  double hi = -INFINITY, lo = INFINITY;
  bool first = true;
  for (const std::string& name : norms) {
    const std::vector<double> a = per_seed(name, 0), b = per_seed(name, n - 1);
    if (!std::isfinite(mean_of(a))) continue;
    md << (first ? "" : ", ") << norm(name).display << " " << fmt(mean_of(a), 3) << " / " << fmt(mean_of(b), 3);
    first = false;
    if (mean_of(a) > hi) hi = mean_of(a), largest = norm(name).display, hi_v = a;
    if (mean_of(a) < lo) lo = mean_of(a), smallest = norm(name).display, lo_v = a;
  }
  md << ". ";
  if (largest != smallest && lo > 0)
    md << "The first layer's gradients are largest with " << largest << ", " << fmt(hi / lo, 3) << " times those with "
       << smallest << " (difference " << difference_text(hi_v, lo_v, Units{1, 3, ""}) << "). ";
  return md.str();
}

}  // namespace normlab::experiments::report
