// Small statistics over runs.
#include "experiments/report/stats.h"

#include <boost/math/distributions/students_t.hpp>

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

MeanInterval mean_interval(const std::vector<double>& v, double level) {
  const std::vector<double> x = finite(v);
  MeanInterval m{static_cast<int64_t>(x.size()), mean_of(x), std_of(x), NAN, NAN};
  if (m.n < 2) return m;
  m.sem = m.std / std::sqrt(static_cast<double>(m.n));
  const boost::math::students_t t(static_cast<double>(m.n - 1));
  m.half_width = boost::math::quantile(t, 1 - (1 - level) / 2) * m.sem;
  return m;
}

WelchTest welch_test(const std::vector<double>& a, const std::vector<double>& b, double level) {
  const std::vector<double> x = finite(a), y = finite(b);
  WelchTest w{mean_of(x) - mean_of(y), NAN, NAN, NAN, NAN, NAN, NAN};
  if (x.size() < 2 || y.size() < 2) return w;
  const double na = static_cast<double>(x.size()), nb = static_cast<double>(y.size());
  const double va = std_of(x) * std_of(x) / na, vb = std_of(y) * std_of(y) / nb;  // s² / n of each side
  if (va + vb == 0) return w;
  w.se = std::sqrt(va + vb);
  w.t = w.diff / w.se;
  w.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  const boost::math::students_t dist(w.df);
  w.p = 2 * boost::math::cdf(boost::math::complement(dist, std::abs(w.t)));
  const double half = boost::math::quantile(dist, 1 - (1 - level) / 2) * w.se;
  w.low = w.diff - half, w.high = w.diff + half;
  return w;
}

}  // namespace normlab::experiments::report
