// Table cells and claims over seeds: means with 95% intervals, Welch tests, ties with the best.
#include "experiments/report/claims.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "experiments/report/stats.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

namespace {

// A value with `decimals` digits after the point; `sign` writes "+" before a positive one.
std::string fixed(double v, int decimals, bool sign = false) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v) < 0.5 * std::pow(10.0, -decimals)) v = 0;  // no "-0.00"
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.*f" : "%.*f", decimals, v);
  return buf;
}

std::string p_text(double p) {
  if (p < 0.001) return "p < 0.001";
  char buf[32];
  std::snprintf(buf, sizeof buf, "p = %.2g", p);
  return buf;
}

}  // namespace

std::string interval_cell(const std::vector<double>& v, const Units& u) {
  if (v.empty()) return "not run";
  const MeanInterval m = mean_interval(v);
  if (m.n == 0) return "diverged";
  std::string cell = fixed(u.factor * m.mean, u.decimals);
  if (m.n > 1) cell += " ± " + fixed(u.factor * m.half_width, u.decimals);
  return cell;
}

bool distinguishable(const std::vector<double>& a, const std::vector<double>& b) {
  return welch_test(a, b).distinguishable();
}

std::string difference_text(const std::vector<double>& a, const std::vector<double>& b, const Units& u) {
  const int64_t na = mean_interval(a).n, nb = mean_interval(b).n;  // the finite values of each side
  const WelchTest w = welch_test(a, b);
  std::string text = fixed(u.factor * w.diff, u.decimals, true) + u.unit + " (";
  if (na < 2 || nb < 2) {
    const std::string seeds = na == 1 && nb == 1 ? "1 seed each" : "n = " + std::to_string(na) + " and " + std::to_string(nb);
    return text + seeds + ": not tested)";
  }
  const std::string n = na == nb ? "n = " + std::to_string(na) : "n = " + std::to_string(na) + " and " + std::to_string(nb);
  if (!std::isfinite(w.p)) return text + "no spread over seeds at " + n + ": not tested)";
  text += "95% CI " + fixed(u.factor * w.low, u.decimals, true) + " to " + fixed(u.factor * w.high, u.decimals, true) +
          ", Welch's t-test " + p_text(w.p);
  return text + (w.distinguishable() ? ")" : ": not distinguishable at " + n + ")");
}

std::string difference_cell(const std::vector<double>& a, const std::vector<double>& b, const Units& u) {
  const WelchTest w = welch_test(a, b);
  if (!std::isfinite(w.diff)) return "n/a";
  std::string cell = fixed(u.factor * w.diff, u.decimals);
  if (std::isfinite(w.low))
    cell += " [" + fixed(u.factor * w.low, u.decimals) + ", " + fixed(u.factor * w.high, u.decimals) + "]";
  return cell;
}

std::vector<size_t> tied_with_best(const std::vector<std::vector<double>>& values) {
  std::vector<size_t> order;
  for (size_t i = 0; i < values.size(); ++i)
    if (std::isfinite(mean_of(values[i]))) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t i, size_t j) { return mean_of(values[i]) > mean_of(values[j]); });
  std::vector<size_t> tied;
  for (size_t i : order)
    if (tied.empty() || !distinguishable(values[order.front()], values[i])) tied.push_back(i);
  return tied;
}

Ranking rank_against_best(const std::vector<std::vector<double>>& values, const Units& u, bool lower_is_better) {
  std::vector<std::vector<double>> ordered = values;  // tied_with_best takes the highest: minus the values
  if (lower_is_better)
    for (std::vector<double>& v : ordered)
      for (double& x : v) x = -x;
  Ranking r{tied_with_best(ordered), {}};
  if (!r.found()) return r;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i == r.best() || values[i].empty()) continue;
    const bool finite = std::isfinite(mean_of(values[i]));
    const bool tied = std::find(r.tied.begin(), r.tied.end(), i) != r.tied.end();
    r.others.push_back({i, finite, tied, finite ? difference_text(values[i], values[r.best()], u) : std::string()});
  }
  return r;
}

std::string tied_sentence(const std::vector<std::string>& names, size_t seeds) {
  return seeds < 2 ? "With one seed nothing is tested: " + join_names(names) + " are not told apart. "
                   : "Not distinguishable from the best at the 95% level: " + join_names(names) + ". ";
}

std::string points_against_best(const Ranking& r, const std::vector<std::string>& labels, const std::string& worse,
                                size_t seeds) {
  std::vector<std::string> different, same;
  for (const Ranking::Other& o : r.others) {
    if (!o.finite) different.push_back("batch " + labels[o.index] + " diverged");
    else if (!o.tied) different.push_back("batch " + labels[o.index] + " " + o.difference);
    else same.push_back(labels[o.index]);
  }
  std::string md;
  if (!different.empty()) {
    md += "; distinguishably " + worse + ": ";
    for (size_t i = 0; i < different.size(); ++i) md += (i ? "; " : "") + different[i];
  }
  if (!same.empty())
    md += seeds < 2 ? "; with one seed, no difference from batch " + join_names(same) + " is tested"
                    : "; not distinguishable from it at batch " + join_names(same);
  return md;
}

std::vector<std::string> interval_columns(const std::string& prefix) {
  std::vector<std::string> c;
  for (const char* s : {"_n", "_mean", "_std", "_sem", "_ci95_low", "_ci95_high"}) c.push_back(prefix + s);
  return c;
}

std::vector<std::string> interval_values(const std::vector<double>& v) {
  const MeanInterval m = mean_interval(v);
  return {std::to_string(m.n), fmt(m.mean), fmt(m.n > 1 ? m.std : NAN), fmt(m.sem), fmt(m.low()), fmt(m.high())};
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

std::string capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace normlab::experiments::report
