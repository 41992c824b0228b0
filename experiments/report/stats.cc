// Small statistics over runs.
#include "experiments/report/stats.h"

#include <algorithm>
#include <cmath>

namespace normlab::experiments::report {

namespace {
std::vector<double> finite(const std::vector<double>& v) {
  std::vector<double> f;
  for (double x : v)
    if (std::isfinite(x)) f.push_back(x);
  return f;
}
}  // namespace

double mean_of(const std::vector<double>& v) {
  const auto f = finite(v);
  if (f.empty()) return NAN;
  double s = 0;
  for (double x : f) s += x;
  return s / f.size();
}

double std_of(const std::vector<double>& v) {
  const auto f = finite(v);
  if (f.empty()) return NAN;
  if (f.size() == 1) return 0;
  const double m = mean_of(f);
  double s = 0;
  for (double x : f) s += (x - m) * (x - m);
  return std::sqrt(s / (f.size() - 1));
}

double median_of(std::vector<double> v) {
  auto f = finite(v);
  if (f.empty()) return NAN;
  std::sort(f.begin(), f.end());
  const size_t n = f.size();
  return n % 2 ? f[n / 2] : 0.5 * (f[n / 2 - 1] + f[n / 2]);
}

}  // namespace normlab::experiments::report
