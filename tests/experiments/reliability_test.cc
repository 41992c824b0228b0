// What the command does with runs that diverge and with hostile output paths: a diverged run is
// recorded and the command succeeds (train: exit status 3 and no model.safetensors); plots leave
// out what is not finite and are skipped when nothing is; gnuplot runs without a shell, so an
// output folder named with $(...), backticks, quotes, spaces or a line break is just a name.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/commands/cli.h"
#include "experiments/report/plot.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using namespace normlab::experiments;
using namespace normlab::experiments::report;
using normlab::test::read_file;
using normlab::test::run_normlab_quiet;
using normlab::test::TempDir;

namespace {

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(reliability)

BOOST_AUTO_TEST_CASE(runs_that_all_diverge_are_recorded_and_the_command_succeeds) {
  TempDir t;
  const fs::path c = t.path() / "compare", s = t.path() / "sweep", st = t.path() / "study";
  BOOST_TEST(run_normlab_quiet({"compare", "--dataset", "moons", "--epochs", "2", "--lr", "1e30", "--norms",
                                "none,batch", "--seeds", "0", "--out", c.string()}) == kExitOk);
  BOOST_TEST(run_normlab_quiet({"sweep", "--quick", "--over", "lr", "--lrs", "1e300", "--out", s.string()}) == kExitOk);
  BOOST_TEST(run_normlab_quiet({"study", "--quick", "--lr", "1e30", "--out", st.string()}) == kExitOk);
  for (const fs::path& d : {c, s, st / "compare", st / "sweep"})
    for (const char* f : {"runs.csv", "summary.csv", "epochs.csv", "report.md", "manifest.json"})
      BOOST_TEST(fs::exists(d / f), (d / f).string());
  BOOST_TEST(contains(read_file(c / "summary.csv"), "\nnone,1,1,"));  // 1 run, 1 diverged
  const std::string sweep = read_file(s / "report.md");
  BOOST_TEST(contains(sweep, "| diverged |"));
  BOOST_TEST(contains(sweep, "every run diverged"));
  BOOST_TEST(contains(sweep, "No plots"));
  BOOST_TEST(!fs::exists(s / "accuracy_vs_lr.png"));
  BOOST_TEST(!contains(sweep, "nan%"));
  BOOST_TEST(fs::exists(st / "report.md"));
}

BOOST_AUTO_TEST_CASE(a_diverged_train_run_exits_3_and_saves_no_model) {
  TempDir t;
  BOOST_TEST(run_normlab_quiet({"train", "--dataset", "moons", "--noise", "1e300", "--out",
                                t.path().string()}) == kExitDiverged);
  BOOST_TEST(!fs::exists(t.path() / "model.safetensors"));
  BOOST_TEST(fs::exists(t.path() / "model.diverged.safetensors"));
  BOOST_TEST(contains(read_file(t.path() / "report.md"), "The run diverged"));
  BOOST_TEST(fs::exists(t.path() / "steps.csv"));
}

BOOST_AUTO_TEST_CASE(plots_leave_out_what_is_not_finite) {
  if (!gnuplot_available()) return;  // gnuplot is in the project's packages; without it nothing is drawn
  TempDir t;
  PlotSpec p{"t", "x", "y"};
  p.log_y = LogY::on;
  p.series = {Series{"a", {1, 2, 3}, {1, NAN, 2}}, Series{"b", {1, 2}, {NAN, -1}}};
  BOOST_TEST(render_plot(p, t.path(), "some"));
  const std::string gp = read_file(t.path() / "some.gp");
  BOOST_TEST(contains(gp, "[no finite values: b]"));
  BOOST_TEST(!contains(gp, "nan"));
  BOOST_TEST(fs::file_size(t.path() / "some.png") > 0);
  p.series = {Series{"b", {1}, {NAN}}};
  BOOST_TEST(!render_plot(p, t.path(), "none"));
  BOOST_TEST(!fs::exists(t.path() / "none.png"));
  BOOST_TEST(!render_panels("t", {p}, 2, t.path(), "panels"));
  for (const auto& e : fs::directory_iterator(t.path()))  // no temporaries left behind
    BOOST_TEST(!contains(e.path().filename().string(), ".tmp"), e.path().string());
}

BOOST_AUTO_TEST_CASE(output_paths_are_names_never_commands) {
  TempDir t;
  const std::vector<std::string> names{"x$(touch " + (t.path() / "PWNED").string() + ")",
                                       "b`touch " + (t.path() / "PWNED2").string() + "`", "q\"uo'te", "a space",
                                       "line\nbreak", "semi;colon|pipe&"};
  for (const std::string& n : names) {
    BOOST_TEST_CONTEXT(n) {
      const fs::path out = t.path() / n;
      BOOST_TEST(run_normlab_quiet({"train", "--quick", "--epochs", "1", "--out", out.string()}) == kExitOk);
      BOOST_TEST(fs::exists(out / "model.safetensors"));
      BOOST_TEST(fs::exists(out / "loss_curve.png") == gnuplot_available());
    }
  }
  BOOST_TEST(!fs::exists(t.path() / "PWNED"));
  BOOST_TEST(!fs::exists(t.path() / "PWNED2"));
}

BOOST_AUTO_TEST_SUITE_END()
