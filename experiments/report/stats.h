// Small statistics over runs: mean, sample standard deviation, median, the 95% confidence
// interval of a mean over seeds (Student t) and Welch's t-test of two means, with NaNs left out.
#pragma once
#include <cstdint>
#include <vector>

namespace normlab::experiments::report {

// Mean of the finite values (NaN if there are none).
double mean_of(const std::vector<double>& v);
// Sample standard deviation (n - 1) of the finite values (0 for one value, NaN for none).
double std_of(const std::vector<double>& v);
// Median of the finite values (NaN if there are none).
double median_of(std::vector<double> v);

// The mean of the finite values with its confidence interval over seeds:
//   mean ± t(1 - (1 - level) / 2, n - 1) · s / √n,
// s the sample standard deviation (n - 1). With fewer than 2 values there is no interval (NaN).
struct MeanInterval {
  int64_t n = 0;
  double mean, std, sem, half_width;  // sem = s / √n; half_width = t · sem
  double low() const { return mean - half_width; }
  double high() const { return mean + half_width; }
};
MeanInterval mean_interval(const std::vector<double>& v, double level = 0.95);

// Welch's t-test of mean(a) - mean(b) (unequal variances, independent samples):
//   t = (m_a - m_b) / √(s_a²/n_a + s_b²/n_b),
//   df = (s_a²/n_a + s_b²/n_b)² / ((s_a²/n_a)² / (n_a - 1) + (s_b²/n_b)² / (n_b - 1))
// (Welch-Satterthwaite), p two-sided, and the interval diff ± t(1 - (1 - level) / 2, df) · se.
// NaN t, df, p and interval when a side has fewer than 2 finite values or both have no spread.
struct WelchTest {
  double diff, se, t, df, p, low, high;
  // The difference is distinguishable from 0 at this level (p < 1 - level); false when untestable.
  bool distinguishable(double level = 0.95) const { return p < 1 - level; }
};
WelchTest welch_test(const std::vector<double>& a, const std::vector<double>& b, double level = 0.95);

}  // namespace normlab::experiments::report
