// The "Why" reading of a comparison's probes: the verdicts (holds, not distinguishable, reversed,
// not tested) of made-up seeds whose answer is known, a run's summary of its probes (layer 1 left
// out, one landscape row per step), and a probed `normlab compare` whose why.csv and
// why_claims.csv are recomputed here from its per-run shifts.csv and landscape.csv.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/report/stats.h"
#include "experiments/report/why.h"
#include "tests/support/csv.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab::experiments;
using namespace normlab::experiments::report;
using normlab::test::TempDir;
using normlab::test::read_file;
using normlab::test::run_normlab_quiet;

namespace {

// A run of `norm` whose probes at steps 0 and 10 give layer 0 ICS 100 (left out: it has no
// predecessor), layers 1 and 2 ics and 3 ics, and one landscape step with beta.
RunResult run_of(const std::string& norm, double ics, double beta, double eigenvalue = 2, double acc = 0.9) {
  RunResult r;
  r.config.model.norm = norm;
  r.config.probe_every = 10;
  r.config.curvature_samples = 100;
  for (int64_t step : {0, 10}) {
    r.shifts.push_back({step, 0, "0.weight", 100, 1, 0.5});
    r.shifts.push_back({step, 1, "3.weight", ics, 0.1, 0.99});
    r.shifts.push_back({step, 2, "6.weight", 3 * ics, 0.3, 0.97});
    for (double m : {0.25, 0.5, 1.0, 2.0, 4.0})  // the step's summaries repeat on each eta's row
      r.landscape.push_back({step, m, 0.1 * m, 1, 0.5, 2, 0.01, 0.4, beta});
  }
  r.curvature.push_back({0, "init", eigenvalue, 5, true, 10, 1, 100});
  r.epochs.push_back({1, 20, 0.5, 0.8, NAN, NAN, 0.4, acc});
  return r;
}

// A CSV file as rows of column -> cell.
std::vector<std::map<std::string, std::string>> rows(const std::string& csv) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  const auto header = normlab::test::csv_cells(line);
  std::vector<std::map<std::string, std::string>> out;
  while (std::getline(in, line)) {
    const auto c = normlab::test::csv_cells(line);
    BOOST_REQUIRE_EQUAL(c.size(), header.size());
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < c.size(); ++i) row[header[i]] = c[i];
    out.push_back(row);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(why)

BOOST_AUTO_TEST_CASE(verdicts_of_known_differences) {
  const std::vector<double> ref{1.0, 1.1, 0.9};
  BOOST_TEST(verdict({0.5, 0.55, 0.45}, ref, true) == "holds");
  BOOST_TEST(verdict({2.0, 2.1, 1.9}, ref, true) == "reversed");
  BOOST_TEST(verdict({2.0, 2.1, 1.9}, ref, false) == "holds");  // the claim is "higher"
  BOOST_TEST(verdict({1.05, 0.7, 1.3}, ref, true) == "not distinguishable");
  BOOST_TEST(verdict({0.5}, ref, true) == "not tested");             // one seed
  BOOST_TEST(verdict({1.0, 1.0}, {2.0, 2.0}, true) == "not tested");  // no spread on either side
  BOOST_TEST(verdict({0.5, NAN, 0.6}, ref, true) == "holds");        // NaNs left out, 2 values remain
}

BOOST_AUTO_TEST_CASE(a_runs_summary_leaves_out_the_first_layer) {
  const RunWhy w = summarize_probes(run_of("batch", 2, 7));
  BOOST_TEST(w.ics == 4.0);  // layers 1 and 2: (2 + 6) / 2 at both steps; layer 0's 100 left out
  BOOST_TEST(w.relative == 0.2, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(w.cosine == 0.98, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(w.loss_variation == 0.01);
  BOOST_TEST(w.grad_predictiveness == 0.4);
  BOOST_TEST(w.beta == 7.0);
  const RunWhy none = summarize_probes(RunResult{});
  BOOST_TEST(std::isnan(none.ics));
  BOOST_TEST(std::isnan(none.beta));
}

BOOST_AUTO_TEST_CASE(values_leave_out_diverged_runs_and_take_the_eigenvalues_magnitude) {
  std::vector<RunResult> runs{run_of("batch", 1, 1, -3), run_of("batch", 2, 1, 5), run_of("batch", 9, 9)};
  runs[2].diverged = true;
  const auto v = why_values(runs, "batch");
  BOOST_TEST(v.at("ics") == (std::vector<double>{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(v.at("eigenvalue_init") == (std::vector<double>{3, 5}), boost::test_tools::per_element());
  BOOST_TEST(v.count("eigenvalue_end") == 0u);
  BOOST_TEST(why_values(runs, "layer").empty());
  BOOST_TEST(!has_probes({RunResult{}}));
  BOOST_TEST(has_probes(runs));
}

BOOST_AUTO_TEST_CASE(the_report_states_each_claims_verdict) {
  std::vector<RunResult> runs;
  for (int s = 0; s < 3; ++s) {
    const double d = 0.05 * (s - 1);  // the seeds' spread
    runs.push_back(run_of("none", 1 + d, 4 + d, 2, 0.80 + d / 10));
    runs.push_back(run_of("batch", 0.5 + d, 1 + d, 2, 0.90 + d / 10));       // lower ICS and beta: holds
    runs.push_back(run_of("noisybatch", 3 + d, 4.4 + 3 * d, 2, 0.90 - d / 10));  // larger ICS; beta not distinguishable
  }
  const std::string md = why_markdown(runs, {"none", "batch", "noisybatch"}, {}, 3);
  BOOST_TEST_INFO(md);
  BOOST_TEST(md.find("### Why") != std::string::npos);
  BOOST_TEST(md.find("| BatchNorm | holds: -1.00 [") != std::string::npos);  // ICS 2 - 4 (x the 2 layers' mean)
  BOOST_TEST(md.find("| noisy BatchNorm | reversed: 4.00 [") != std::string::npos);
  BOOST_TEST(md.find("it trains as well as BatchNorm (not distinguishable)") != std::string::npos);
  BOOST_TEST(md.find("its ICS is larger") != std::string::npos);
  BOOST_TEST(md.find("SGD with momentum 0.9") != std::string::npos);  // the default optimizer's note
  BOOST_TEST(why_markdown({RunResult{}}, {"none"}, {}, 3).empty());
}

// A probed comparison: why.csv's ICS and beta means recomputed from the runs' shifts.csv and
// landscape.csv, and every claim's verdict in why_claims.csv from those per-seed values.
BOOST_AUTO_TEST_CASE(a_probed_comparisons_tables_match_its_records) {
  TempDir tmp;
  const auto out = tmp.path() / "cmp";
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"compare", "--quick", "--norms", "none,batch,noisybatch", "--epochs", "1",
                                         "--probe-every", "10", "--curvature-samples", "100", "--out", out.string()}),
                      0);
  // Per norm and seed: the mean over steps of the mean over layers 1.. of the ICS.
  std::map<std::string, std::map<std::string, std::map<std::string, std::vector<double>>>> per_step;
  for (const auto& r : rows(read_file(out / "shifts.csv")))
    if (r.at("layer") != "0") per_step[r.at("norm")][r.at("seed")][r.at("step")].push_back(std::stod(r.at("ics")));
  std::map<std::string, std::vector<double>> ics;
  for (const auto& [norm, seeds] : per_step)
    for (const auto& [seed, steps] : seeds) {
      std::vector<double> means;
      for (const auto& [step, v] : steps) means.push_back(mean_of(v));
      ics[norm].push_back(mean_of(means));
    }
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> beta_rows;
  for (const auto& r : rows(read_file(out / "landscape.csv")))
    beta_rows[r.at("norm")][r.at("seed")][r.at("step")] = std::stod(r.at("beta_smoothness"));
  std::map<std::string, std::vector<double>> beta;
  for (const auto& [norm, seeds] : beta_rows)
    for (const auto& [seed, steps] : seeds) {
      std::vector<double> v;
      for (const auto& [step, b] : steps) v.push_back(b);
      beta[norm].push_back(mean_of(v));
    }
  BOOST_REQUIRE_EQUAL(ics.size(), 3u);
  for (const auto& r : rows(read_file(out / "why.csv"))) {
    const std::string n = r.at("norm");
    BOOST_TEST_CONTEXT(n) {
      BOOST_TEST(std::stod(r.at("ics_n")) == 3.0);
      BOOST_TEST(std::stod(r.at("ics_mean")) == mean_of(ics[n]), boost::test_tools::tolerance(1e-7));
      BOOST_TEST(std::stod(r.at("beta_smoothness_mean")) == mean_of(beta[n]), boost::test_tools::tolerance(1e-7));
      BOOST_TEST(std::isfinite(std::stod(r.at("eigenvalue_end_mean"))));
    }
  }
  int checked = 0;
  for (const auto& r : rows(read_file(out / "why_claims.csv"))) {
    const std::string& measure = r.at("measure");
    if (measure != "ics" && measure != "beta_smoothness") continue;
    const auto& a = (measure == "ics" ? ics : beta)[r.at("norm")];
    const auto& b = (measure == "ics" ? ics : beta)[r.at("reference")];
    const WelchTest w = welch_test(a, b);
    BOOST_TEST_CONTEXT(r.at("norm") << " vs " << r.at("reference") << ", " << measure) {
      BOOST_TEST(std::stod(r.at("difference")) == w.diff, boost::test_tools::tolerance(1e-6));
      BOOST_TEST(std::stod(r.at("p")) == w.p, boost::test_tools::tolerance(1e-5));
      const bool lower = r.at("claim") != "noisy BatchNorm has the larger internal covariate shift";
      const std::string expected = !w.distinguishable() ? "not distinguishable"
                                   : (w.diff < 0) == lower ? "holds"
                                                           : "reversed";
      BOOST_TEST(r.at("verdict") == expected);
    }
    ++checked;
  }
  BOOST_TEST(checked == 5);  // batch and noisybatch vs none on both, noisybatch vs batch on ICS
  const std::string report = read_file(out / "report.md");
  BOOST_TEST(report.find("### Why: internal covariate shift and the landscape") != std::string::npos);
  BOOST_TEST(report.find("**Noisy BatchNorm against BatchNorm.**") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
