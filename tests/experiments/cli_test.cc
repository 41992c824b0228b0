// The normlab command end to end: the quick preset writes every output file, the same command
// gives byte-identical CSVs, the demo's loss falls, and bad input gives a clear error with nothing
// written.
#include <fcntl.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "experiments/cli.h"
#include "nn/safetensors.h"

namespace fs = std::filesystem;
using normlab::experiments::run_cli;

namespace {

// A fresh temporary folder, removed at the end of the test.
struct Tmp {
  fs::path dir;
  Tmp() {
    dir = fs::temp_directory_path() / ("normlab_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(dir);
  }
  ~Tmp() { fs::remove_all(dir); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

int run(std::vector<std::string> args) {
  args.insert(args.begin(), "normlab");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return run_cli(static_cast<int>(argv.size()), argv.data());
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t lines(const fs::path& p) {
  const std::string s = slurp(p);
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Runs the command and expects a normlab::Error whose message contains `needle`.
void expect_error(const std::vector<std::string>& args, const std::string& needle) {
  BOOST_TEST_CONTEXT("normlab " << [&] { std::string s; for (auto& a : args) s += a + " "; return s; }()) {
    try {
      run(args);
      BOOST_ERROR("no error was raised");
    } catch (const normlab::Error& e) {
      BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, "message: " << e.what());
    }
  }
}

// Sends this process's stdout (file descriptor 1) to a file while alive, for commands that print.
struct StdoutToFile {
  int saved = -1;
  explicit StdoutToFile(const fs::path& p) {
    std::cout.flush();
    std::fflush(stdout);
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    BOOST_REQUIRE(fd >= 0);
    saved = ::dup(1);
    ::dup2(fd, 1);
    ::close(fd);
  }
  ~StdoutToFile() {
    std::cout.flush();
    std::fflush(stdout);
    ::dup2(saved, 1);
    ::close(saved);
  }
};

const std::string kFixtures = std::string(NORMLAB_SOURCE_DIR) + "/tests/experiments/fixtures/";

}  // namespace

BOOST_AUTO_TEST_SUITE(cli)

BOOST_AUTO_TEST_CASE(quick_study_writes_every_output_file) {
  Tmp t;
  BOOST_REQUIRE_EQUAL(run({"study", "--quick", "--quiet", "--out", t.dir.string()}), 0);
  const std::vector<std::string> compare_files = {"runs.csv", "steps.csv", "epochs.csv", "activations.csv",
                                                  "grad_norms.csv", "summary.csv", "report.md", "manifest.json",
                                                  "loss_curves.png", "loss_curves.svg", "test_accuracy.png",
                                                  "test_accuracy.svg", "activations.png", "activations.svg"};
  const std::vector<std::string> sweep_files = {"runs.csv", "epochs.csv", "summary.csv", "report.md", "manifest.json",
                                                "accuracy_vs_batch.png", "accuracy_vs_batch.svg", "bn_eval_gap.png",
                                                "bn_eval_gap.svg"};
  for (const auto& f : compare_files) BOOST_TEST(fs::file_size(t.dir / "compare" / f) > 0, f);
  for (const auto& f : sweep_files) BOOST_TEST(fs::file_size(t.dir / "sweep" / f) > 0, f);
  BOOST_TEST(fs::file_size(t.dir / "report.md") > 0);
  // No temporary file is left behind.
  for (const auto& e : fs::recursive_directory_iterator(t.dir))
    BOOST_TEST(e.path().string().find(".tmp") == std::string::npos, e.path());
  // 3 norms x 2 seeds in the comparison; 3 norms x 4 batch sizes x 2 seeds in the sweep.
  BOOST_TEST(lines(t.dir / "compare" / "runs.csv") == 1u + 6u);
  BOOST_TEST(lines(t.dir / "sweep" / "runs.csv") == 1u + 24u);
  BOOST_TEST(lines(t.dir / "sweep" / "summary.csv") == 1u + 12u);
  // PNG files are PNGs, SVG files are SVG.
  BOOST_TEST(slurp(t.dir / "compare" / "loss_curves.png").substr(1, 3) == "PNG");
  BOOST_TEST(slurp(t.dir / "sweep" / "accuracy_vs_batch.svg").find("<svg") != std::string::npos);
  // The manifest records what the issue asks for.
  const auto m = nlohmann::json::parse(slurp(t.dir / "compare" / "manifest.json"));
  for (const char* key : {"command", "git_commit", "highway_target", "threads", "wall_seconds", "config", "dataset"})
    BOOST_TEST(m.contains(key), key);
  BOOST_TEST(m["config"]["seeds"].size() == 2u);
  // The combined report has both sections and links the plots in their folders.
  const std::string rep = slurp(t.dir / "report.md");
  BOOST_TEST(rep.find("## Convergence") != std::string::npos);
  BOOST_TEST(rep.find("## Batch-size sensitivity") != std::string::npos);
  BOOST_TEST(rep.find("(sweep/accuracy_vs_batch.png)") != std::string::npos);
  BOOST_TEST(rep.find("Model 2-32-32-2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(same_command_same_seed_gives_byte_identical_csv) {
  Tmp a, b;
  for (const Tmp* t : {&a, &b})
    BOOST_REQUIRE_EQUAL(run({"compare", "--quick", "--quiet", "--out", t->dir.string()}), 0);
  for (const char* f : {"runs.csv", "steps.csv", "epochs.csv", "activations.csv", "grad_norms.csv", "summary.csv"}) {
    BOOST_TEST_CONTEXT(f) {
      const std::string x = slurp(a.dir / f), y = slurp(b.dir / f);
      BOOST_TEST(!x.empty());
      BOOST_TEST((x == y));
    }
  }
  // A different seed gives different numbers.
  Tmp c;
  BOOST_REQUIRE_EQUAL(run({"compare", "--quick", "--quiet", "--seeds", "5", "--out", c.dir.string()}), 0);
  BOOST_TEST((slurp(a.dir / "steps.csv") != slurp(c.dir / "steps.csv")));
}

BOOST_AUTO_TEST_CASE(train_writes_a_checkpoint_with_pytorch_names) {
  Tmp t;
  BOOST_REQUIRE_EQUAL(run({"train", "--quick", "--quiet", "--norm", "batch", "--out", t.dir.string()}), 0);
  const auto f = normlab::nn::load_safetensors((t.dir / "model.safetensors").string());
  std::vector<std::string> names;
  for (const auto& [n, x] : f.tensors) names.push_back(n);
  for (const char* want : {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                           "1.num_batches_tracked", "3.weight", "6.bias"})
    BOOST_TEST((std::find(names.begin(), names.end(), want) != names.end()), want);
  BOOST_TEST(lines(t.dir / "epochs.csv") == 1u + 3u);
}

BOOST_AUTO_TEST_CASE(csv_dataset_trains) {
  Tmp t;
  const int rc = run({"train", "--quiet", "--dataset", "csv", "--csv", kFixtures + "iris_like.csv", "--label", "species",
                      "--hidden", "8", "--epochs", "2", "--batch-size", "4", "--test-fraction", "0.25", "--out",
                      t.dir.string()});
  BOOST_REQUIRE_EQUAL(rc, 0);
  BOOST_TEST(fs::exists(t.dir / "epochs.csv"));
}

BOOST_AUTO_TEST_CASE(a_diverging_run_is_recorded_and_the_sweep_goes_on) {
  Tmp t;
  BOOST_REQUIRE_EQUAL(run({"sweep", "--quick", "--quiet", "--over", "lr", "--lrs", "0.1,1e7", "--norms", "none",
                           "--seeds", "0,1", "--warmup", "0", "--out", t.dir.string()}),
                      0);
  const std::string runs = slurp(t.dir / "runs.csv");
  BOOST_TEST(lines(t.dir / "runs.csv") == 1u + 4u);
  // Without a norm, every run with lr 1e7 diverged (diverged = 1 and a step), the lr 0.1 runs did
  // not. (With LayerNorm the same lr gives a huge but finite loss: normalization bounds the hidden
  // activations, so that run is not a divergence.)
  std::istringstream in(runs);
  std::string line;
  std::getline(in, line);
  int diverged = 0, fine = 0;
  while (std::getline(in, line)) {
    if (line.find(",10000000,") != std::string::npos) {
      BOOST_TEST(line.find(",cosine,1,") != std::string::npos, line);
      ++diverged;
    } else {
      BOOST_TEST(line.find(",cosine,0,-1,") != std::string::npos, line);
      ++fine;
    }
  }
  BOOST_TEST(diverged == 2);
  BOOST_TEST(fine == 2);
  BOOST_TEST(slurp(t.dir / "report.md").find("diverged run") != std::string::npos);
}

// `normlab demo` succeeds and the loss it prints falls: the first and last of its "loss a -> b"
// line, and every "step ... loss" line below the first (stdout is captured in a file).
BOOST_AUTO_TEST_CASE(demo_succeeds_and_the_loss_falls) {
  Tmp t;
  fs::create_directories(t.dir);
  const fs::path out = t.dir / "stdout.txt";
  int rc = -1;
  {
    StdoutToFile capture(out);
    rc = run({"demo", "--steps", "100"});
  }
  BOOST_REQUIRE_EQUAL(rc, 0);
  const std::string text = slurp(out);
  BOOST_TEST_MESSAGE("normlab demo printed:\n" << text);
  std::istringstream in(text);
  std::string line;
  std::vector<double> step_losses;
  double first = -1, last = -1;
  while (std::getline(in, line)) {
    int step = 0;
    double a = 0, b = 0;
    if (std::sscanf(line.c_str(), "step %d loss %lf", &step, &a) == 2) step_losses.push_back(a);
    else if (std::sscanf(line.c_str(), "loss %lf -> %lf", &a, &b) == 2) first = a, last = b;
  }
  BOOST_REQUIRE_EQUAL(step_losses.size(), 11u);  // steps 0, 10, ..., 100
  BOOST_TEST(first == step_losses.front(), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(last == step_losses.back(), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(first > 0.5);  // about log 2 at the start: two balanced classes
  BOOST_TEST(last < 0.5 * first);
  for (size_t i = 1; i < step_losses.size(); ++i) BOOST_TEST(step_losses[i] < step_losses[0], "printed step " << i);
}

BOOST_AUTO_TEST_CASE(bad_input_is_a_clear_error_and_writes_nothing) {
  Tmp t;
  const std::string out = t.dir.string();
  expect_error({"train", "--quick", "--norm", "weird", "--out", out}, "unknown norm 'weird'");
  expect_error({"train", "--quick", "--activation", "swish", "--out", out}, "unknown activation 'swish'");
  expect_error({"train", "--quick", "--dataset", "mnist3d", "--out", out}, "unknown dataset 'mnist3d'");
  expect_error({"train", "--quick", "--batch-size", "0", "--out", out}, "batch size must be at least 1");
  expect_error({"train", "--quick", "--batch-size", "100000", "--out", out}, "larger than the training set");
  expect_error({"train", "--quick", "--norm", "batch", "--batch-size", "1", "--out", out}, "BatchNorm needs more than one");
  expect_error({"sweep", "--quick", "--batch-sizes", "1,2", "--out", out}, "BatchNorm needs more than one");
  expect_error({"sweep", "--quick", "--full", "--out", out}, "--quick and --full cannot be used together");
  expect_error({"train", "--quick", "--threads", "-1", "--out", out}, "--threads must be at least 1");
  expect_error({"train", "--quick", "--threads", "0", "--out", out}, "--threads must be at least 1, got 0");
  expect_error({"train", "--dataset", "csv", "--csv", kFixtures + "does_not_exist.csv", "--label", "y", "--out", out},
               "does_not_exist.csv");
  expect_error({"train", "--dataset", "csv", "--csv", kFixtures + "iris_like.csv", "--out", out}, "--label");
  expect_error({"train", "--quick", "--csv", "x.csv", "--out", out}, "--csv and --label go with --dataset csv");
  expect_error({"train", "--quick", "--norm", "group", "--groups", "5", "--out", out}, "divisible by 5");
  BOOST_TEST(!fs::exists(t.dir), "an output folder was created by a failed command");
  // An output folder that cannot be created: a path below a regular file.
  Tmp f;
  fs::create_directories(f.dir);
  std::ofstream(f.dir / "file") << "x";
  expect_error({"train", "--quick", "--out", (f.dir / "file" / "sub").string()}, "cannot write to output folder");
  // Usage errors (unknown flag, bad value) exit non-zero through CLI11.
  BOOST_TEST(run({"train", "--no-such-flag"}) != 0);
  BOOST_TEST(run({"sweep", "--over", "width"}) != 0);
  BOOST_TEST(run({}) != 0);
}

BOOST_AUTO_TEST_SUITE_END()
