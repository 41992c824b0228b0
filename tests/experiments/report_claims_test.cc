// The claims of a comparison's report.md against its own runs.csv, recomputed here by hand: each
// norm's cell is the mean over the 3 seeds ± t(0.975, 2) s / sqrt(3) (t = 4.302653), the reading
// names the norm with the highest mean, states every other norm's difference to it, and calls a
// difference distinguishable only when Welch's t clears the critical value of its degrees of
// freedom (between 2 and 4 here: |t| > 4.303 always is, |t| < 2.776 never is).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/csv.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using normlab::test::TempDir;
using normlab::test::read_file;
using normlab::test::run_normlab_quiet;

namespace {

// norm -> the seeds' values of `column` in a runs.csv.
std::map<std::string, std::vector<double>> by_norm(const std::string& csv, const std::string& column) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  const auto header = normlab::test::csv_cells(line);
  size_t norm = 0, col = 0;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "norm") norm = i;
    if (header[i] == column) col = i;
  }
  std::map<std::string, std::vector<double>> v;
  while (std::getline(in, line)) {
    const auto c = normlab::test::csv_cells(line);
    v[c[norm]].push_back(std::stod(c[col]));
  }
  return v;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

double var(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / (v.size() - 1);
}

std::string two(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(report_claims)

BOOST_AUTO_TEST_CASE(a_comparison_report_states_what_its_runs_give) {
  TempDir t;
  BOOST_REQUIRE(run_normlab_quiet({"compare", "--quick", "--seeds", "0,1,2", "--out", t.path().string()}) == 0);
  const std::string report = read_file(t.path() / "report.md");
  const auto acc = by_norm(read_file(t.path() / "runs.csv"), "final_test_acc");
  const std::map<std::string, std::string> display{{"none", "no norm"}, {"batch", "BatchNorm"}, {"layer", "LayerNorm"}};
  BOOST_REQUIRE(acc.size() == 3u);
  std::string best;
  for (const auto& [norm, v] : acc) {
    BOOST_REQUIRE(v.size() == 3u);
    const std::string cell =
        two(100 * mean(v)) + " ± " + two(100 * 4.302653 * std::sqrt(var(v) / 3));  // the 95% interval, by hand
    BOOST_TEST(report.find("| " + display.at(norm) + " | " + cell + " |") != std::string::npos, norm << ": " << cell);
    if (best.empty() || mean(v) > mean(acc.at(best))) best = norm;
  }
  BOOST_TEST(report.find("Highest mean final test accuracy: " + display.at(best)) != std::string::npos, report);
  for (const auto& [norm, v] : acc) {
    if (norm == best) continue;
    const auto& b = acc.at(best);
    const double diff = 100 * (mean(v) - mean(b));
    const std::string said = display.at(norm) + " " + (diff >= 0 ? "+" : "") + two(diff) + " points (";
    const size_t at = report.find(said);
    BOOST_TEST(at != std::string::npos, said);
    if (at == std::string::npos) continue;
    const std::string sentence = report.substr(at, report.find(')', at) - at);
    const double welch_t = std::fabs(mean(v) - mean(b)) / std::sqrt(var(v) / 3 + var(b) / 3);
    const bool not_distinguishable = sentence.find("not distinguishable at n = 3") != std::string::npos;
    if (welch_t < 2.776445) BOOST_TEST(not_distinguishable, sentence);
    if (welch_t > 4.302653) BOOST_TEST(!not_distinguishable, sentence);
  }
  // The summary carries n, mean, std, sem and the interval for each norm.
  const std::string summary = read_file(t.path() / "summary.csv");
  BOOST_TEST(summary.find("test_acc_n,test_acc_mean,test_acc_std,test_acc_sem,test_acc_ci95_low,test_acc_ci95_high") !=
             std::string::npos, summary);
}

BOOST_AUTO_TEST_SUITE_END()
