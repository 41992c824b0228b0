// Small statistics over runs: mean, sample standard deviation, median, with NaNs left out.
#pragma once
#include <vector>

namespace normlab::experiments::report {

// Mean of the finite values (NaN if there are none).
double mean_of(const std::vector<double>& v);
// Sample standard deviation (n - 1) of the finite values (0 for one value, NaN for none).
double std_of(const std::vector<double>& v);
// Median of the finite values (NaN if there are none).
double median_of(std::vector<double> v);

}  // namespace normlab::experiments::report
