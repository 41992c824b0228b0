// The numbers a report states about seeds, and the claims it makes with them: a mean with its 95%
// confidence interval and n, the difference of two settings with Welch's t-test, and the settings
// tied with the best. Every table cell and reading sentence over seeds is written by these.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace normlab::experiments::report {

// How values read in the text: multiplied by `factor` (100 for fractions shown in %), written with
// `decimals` digits after the point, differences followed by `unit` (" points").
struct Units {
  double factor = 1;
  int decimals = 4;
  std::string unit;
};
inline const Units kPercent{100, 2, " points"};

// "87.31 ± 0.42": the mean of the finite values ± the half-width of its 95% confidence interval
// (Student t over the n values); "87.31" for one value (no spread is claimed); "diverged" when no
// value is finite; "not run" for none.
std::string interval_cell(const std::vector<double>& v, const Units& u);

// The difference mean(a) - mean(b) with its test, e.g.
//   "+0.20 points (95% CI -0.31 to +0.71, Welch's t-test p = 0.31: not distinguishable at n = 3)"
//   "-21.70 points (95% CI -24.10 to -19.30, Welch's t-test p < 0.001)"
//   "+0.20 points (1 seed each: not tested)"
// n counts the finite values of each side ("n = 3" when equal, "n = 3 and 2" otherwise).
std::string difference_text(const std::vector<double>& a, const std::vector<double>& b, const Units& u);

// The difference mean(a) - mean(b) as a table cell: "21.70 [19.30, 24.10]" (its 95% Welch
// interval), the difference alone when untestable, "n/a" when a side has no finite value.
std::string difference_cell(const std::vector<double>& a, const std::vector<double>& b, const Units& u);

// True when a and b differ at the 95% level by Welch's t-test (p < 0.05); false when untestable
// (fewer than 2 finite values on a side, or no spread on either).
bool distinguishable(const std::vector<double>& a, const std::vector<double>& b);

// The settings tied with the best: the one with the highest mean, then every other whose
// difference to it is not distinguishable (Welch p >= 0.05, or untestable), by mean, highest
// first. Indices into `values`; settings without a finite value are left out.
std::vector<size_t> tied_with_best(const std::vector<std::vector<double>>& values);

// Settings (their values over seeds: norms, or one norm's batch sizes) against the best one, the
// highest mean (lower_is_better: the lowest), as every study's reading states it: the settings
// tied with it (tied_with_best) and each other setting's difference to it.
struct Ranking {
  struct Other {
    size_t index;
    bool finite;             // a finite mean (else every run diverged)
    bool tied;               // not distinguishable from the best
    std::string difference;  // difference_text(its values, the best's), when finite
  };
  std::vector<size_t> tied;   // the best first, then the others tied with it by mean; empty: no finite mean
  std::vector<Other> others;  // every setting but the best with a value, in the settings' order
  bool found() const { return !tied.empty(); }
  size_t best() const { return tied.front(); }
};
Ranking rank_against_best(const std::vector<std::vector<double>>& values, const Units& u, bool lower_is_better = false);

// The settings tied with the best (names[0] the best): "With one seed nothing is tested: A and B
// are not told apart. " with one seed, else "Not distinguishable from the best at the 95% level: A
// and B. ".
std::string tied_sentence(const std::vector<std::string>& names, size_t seeds);

// One setting's points (labels: batch sizes) against its best point: "; distinguishably <worse>:
// batch 2 -1.20 points (...); batch 4 diverged" and "; not distinguishable from it at batch 8 and
// 16" ("; with one seed, no difference from batch 8 and 16 is tested"); "" when nothing else ran.
std::string points_against_best(const Ranking& r, const std::vector<std::string>& labels, const std::string& worse,
                                size_t seeds);

// The CSV columns of a mean over seeds: <prefix>_n (finite values), _mean, _std (n - 1), _sem,
// _ci95_low and _ci95_high (Student t; nan for n < 2), and their cells for the values v.
std::vector<std::string> interval_columns(const std::string& prefix);
std::vector<std::string> interval_values(const std::vector<double>& v);

// "A", "A and B", "A, B and C".
std::string join_names(const std::vector<std::string>& names);
// The text with its first letter upper-case, to start a sentence ("no norm" -> "No norm").
std::string capitalized(std::string text);

}  // namespace normlab::experiments::report
