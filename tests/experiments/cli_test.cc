// The normlab command end to end: the quick preset writes every output file, the same command
// gives byte-identical CSVs (whatever the thread count), train prints each epoch as it ends, --help
// states the preset defaults, the demo's loss falls, and bad input gives a clear error with nothing
// written.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/split.h"
#include "experiments/commands/cli.h"
#include "experiments/models/saved_model.h"
#include "serialize/safetensors.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using normlab::test::capture_output;
using normlab::test::read_file;
using normlab::test::run_normlab;
using normlab::test::run_normlab_quiet;
using normlab::test::TempDir;
using normlab::test::write_file;

namespace {

size_t lines(const fs::path& p) {
  const std::string s = read_file(p);
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Runs the command and expects a normlab::Error whose message contains every one of `needles`.
void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
  BOOST_TEST_CONTEXT("normlab " << [&] { std::string s; for (auto& a : args) s += a + " "; return s; }()) {
    try {
      run_normlab(args);
      BOOST_ERROR("no error was raised");
    } catch (const normlab::Error& e) {
      for (const auto& needle : needles)
        BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, "lacks \"" << needle << "\": " << e.what());
    }
  }
}
void expect_error(const std::vector<std::string>& args, const std::string& needle) {
  expect_error(args, std::vector<std::string>{needle});
}

// The lines of s.
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const std::string kFixtures = std::string(NORMLAB_SOURCE_DIR) + "/tests/experiments/fixtures/";

}  // namespace

BOOST_AUTO_TEST_SUITE(cli)

BOOST_AUTO_TEST_CASE(quick_study_writes_every_output_file) {
  TempDir t;
  BOOST_REQUIRE_EQUAL(run_normlab({"study", "--quick", "--quiet", "--out", t.path().string()}), 0);
  const std::vector<std::string> compare_files = {"runs.csv", "steps.csv", "epochs.csv", "activations.csv",
                                                  "grad_norms.csv", "summary.csv", "report.md", "manifest.json",
                                                  "loss_curves.png", "loss_curves.svg", "test_accuracy.png",
                                                  "test_accuracy.svg", "activations.png", "activations.svg",
                                                  "grad_norms.png", "grad_norms.svg"};
  const std::vector<std::string> sweep_files = {"runs.csv", "epochs.csv", "summary.csv", "report.md", "manifest.json",
                                                "accuracy_vs_batch.png", "accuracy_vs_batch.svg", "bn_eval_gap.png",
                                                "bn_eval_gap.svg"};
  for (const auto& f : compare_files) BOOST_TEST(fs::file_size(t.path() / "compare" / f) > 0, f);
  for (const auto& f : sweep_files) BOOST_TEST(fs::file_size(t.path() / "sweep" / f) > 0, f);
  BOOST_TEST(fs::file_size(t.path() / "report.md") > 0);
  // No temporary file is left behind.
  for (const auto& e : fs::recursive_directory_iterator(t.path()))
    BOOST_TEST(e.path().string().find(".tmp") == std::string::npos, e.path());
  // 3 norms x 3 seeds in the comparison; 3 norms x 4 batch sizes x 3 seeds in the sweep.
  BOOST_TEST(lines(t.path() / "compare" / "runs.csv") == 1u + 9u);
  BOOST_TEST(lines(t.path() / "sweep" / "runs.csv") == 1u + 36u);
  BOOST_TEST(lines(t.path() / "sweep" / "summary.csv") == 1u + 12u);
  // PNG files are PNGs, SVG files are SVG.
  BOOST_TEST(read_file(t.path() / "compare" / "loss_curves.png").substr(1, 3) == "PNG");
  BOOST_TEST(read_file(t.path() / "sweep" / "accuracy_vs_batch.svg").find("<svg") != std::string::npos);
  // The manifest records what the issue asks for.
  const auto m = nlohmann::json::parse(read_file(t.path() / "compare" / "manifest.json"));
  for (const char* key : {"command", "git_commit", "highway_target", "threads", "wall_seconds", "config", "dataset"})
    BOOST_TEST(m.contains(key), key);
  BOOST_TEST(m["config"]["seeds"].size() == 3u);
  // The combined report has both sections and links the plots in their folders.
  const std::string rep = read_file(t.path() / "report.md");
  BOOST_TEST(rep.find("## Convergence") != std::string::npos);
  BOOST_TEST(rep.find("## Batch-size sensitivity") != std::string::npos);
  BOOST_TEST(rep.find("(sweep/accuracy_vs_batch.png)") != std::string::npos);
  BOOST_TEST(rep.find("Model 2-32-32-2") != std::string::npos);
  // The activation plot has a mean and a std panel for each hidden layer (2 with --quick); the
  // gradient-norm plot a panel per weight matrix; the reading says what they show.
  const std::string act = read_file(t.path() / "compare" / "activations.gp");
  const std::string grad = read_file(t.path() / "compare" / "grad_norms.gp");
  for (const char* panel : {"Linear 1: mean", "Linear 1: std", "Linear 2: mean", "Linear 2: std"})
    BOOST_TEST(act.find(panel) != std::string::npos, panel);
  for (const char* line :
       {"BatchNorm, before the norm", "BatchNorm, after the norm", "LayerNorm, after the norm", "'no norm'"})
    BOOST_TEST(act.find(line) != std::string::npos, line);
  for (const char* panel : {"Gradient norm: Linear 1 weight", "Gradient norm: Linear 2 weight",
                            "Gradient norm: output Linear weight"})
    BOOST_TEST(grad.find(panel) != std::string::npos, panel);
  BOOST_TEST(act.find("the norm (mean over ") != std::string::npos);  // the seeds of the quick study, no band
  BOOST_TEST(rep.find("(compare/grad_norms.png)") != std::string::npos);
  BOOST_TEST(rep.find("With BatchNorm, the norm's output") != std::string::npos);
  BOOST_TEST(rep.find("Gradient norms, mean over recorded steps and seeds") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(same_command_same_seed_gives_byte_identical_csv) {
  TempDir a, b;
  for (const TempDir* t : {&a, &b})
    BOOST_REQUIRE_EQUAL(run_normlab({"compare", "--quick", "--quiet", "--out", t->path().string()}), 0);
  for (const char* f : {"runs.csv", "steps.csv", "epochs.csv", "activations.csv", "grad_norms.csv", "summary.csv"}) {
    BOOST_TEST_CONTEXT(f) {
      const std::string x = read_file(a.path() / f), y = read_file(b.path() / f);
      BOOST_TEST(!x.empty());
      BOOST_TEST((x == y));
    }
  }
  // A different seed gives different numbers.
  TempDir c;
  BOOST_REQUIRE_EQUAL(run_normlab({"compare", "--quick", "--quiet", "--seeds", "5", "--out", c.path().string()}), 0);
  BOOST_TEST((read_file(a.path() / "steps.csv") != read_file(c.path() / "steps.csv")));
}

// A sweep over batch sizes with BatchNorm (so the running, precise and test-batch evaluations are
// all in the CSVs), with layers wide enough and batches large enough that the GEMM and the norm
// kernels split their work between threads: the same bytes twice, and on 1 thread as on 2.
BOOST_AUTO_TEST_CASE(sweep_with_batchnorm_gives_byte_identical_csv_on_any_thread_count) {
  const std::vector<std::string> sweep = {"sweep", "--quiet", "--dataset", "moons", "--samples", "2000",
                                          "--hidden", "256,256", "--over", "batch", "--batch-sizes", "16,256",
                                          "--norms", "none,batch,layer", "--seeds", "0", "--epochs", "3",
                                          "--lr", "0.1", "--warmup", "10"};
  TempDir two_a, two_b, one;
  for (auto [t, threads] : {std::pair{&two_a, "2"}, std::pair{&two_b, "2"}, std::pair{&one, "1"}}) {
    auto args = sweep;
    args.insert(args.end(), {"--threads", threads, "--out", t->path().string()});
    BOOST_REQUIRE_EQUAL(run_normlab(args), 0);
  }
  for (const char* f : {"runs.csv", "epochs.csv", "summary.csv"}) {
    BOOST_TEST_CONTEXT(f) {
      const std::string x = read_file(two_a.path() / f);
      BOOST_TEST(!x.empty());
      BOOST_TEST((x == read_file(two_b.path() / f)), "two runs on 2 threads differ");
      BOOST_TEST((x == read_file(one.path() / f)), "1 thread and 2 threads differ");
    }
  }
  // The BatchNorm rows hold all three evaluations (no NaN), the others only the running one.
  int bn_rows = 0;
  for (const std::string& line : split_lines(read_file(one.path() / "runs.csv")))
    if (line.find(",batch,relu,") != std::string::npos) {
      ++bn_rows;
      BOOST_TEST(line.find("nan") == std::string::npos, line);
    }
  BOOST_TEST(bn_rows == 2);
}

// The study's CNN on Fashion-MNIST images under four norms (convolutions, pooling, BatchNorm2d,
// GroupNorm and InstanceNorm on image activations): the same bytes on 1 thread as on 2.
BOOST_AUTO_TEST_CASE(cnn_compare_gives_byte_identical_csv_on_any_thread_count) {
  const std::vector<std::string> compare = {"compare", "--quiet", "--arch", "cnn", "--train-limit", "512",
                                            "--test-limit", "200", "--epochs", "1", "--batch-size", "64",
                                            "--norms", "none,batch,group,instance", "--seeds", "0"};
  TempDir two, one;
  for (auto [t, threads] : {std::pair{&two, "2"}, std::pair{&one, "1"}}) {
    auto args = compare;
    args.insert(args.end(), {"--threads", threads, "--out", t->path().string()});
    BOOST_REQUIRE_EQUAL(run_normlab(args), 0);
  }
  for (const char* f : {"runs.csv", "steps.csv", "epochs.csv", "activations.csv", "grad_norms.csv"}) {
    BOOST_TEST_CONTEXT(f) {
      const std::string x = read_file(two.path() / f);
      BOOST_TEST(!x.empty());
      BOOST_TEST((x == read_file(one.path() / f)), "1 thread and 2 threads differ");
    }
  }
  // A CNN evaluates in batches of 100 unless --eval-batch says otherwise (an MLP in batches of 1000).
  const std::string config = nlohmann::json::parse(read_file(two.path() / "manifest.json"))["config"].dump();
  BOOST_TEST(config.find("\"eval_batch\":100,") != std::string::npos, config);
}

// The study on Fashion-MNIST with its CNN part, shrunk to seconds: the four parts' folders, and a
// report with the CNN sections and the MLP/CNN side-by-side table.
BOOST_AUTO_TEST_CASE(study_on_images_adds_the_cnn_part) {
  TempDir t;
  BOOST_REQUIRE_EQUAL(run_normlab({"study", "--quiet", "--train-limit", "1000", "--test-limit", "200", "--epochs", "1",
                                   "--seeds", "0", "--batch-sizes", "4,32", "--sweep-train-limit", "500",
                                   "--cnn-train-limit", "300", "--cnn-epochs", "1", "--cnn-batch-sizes", "4,32",
                                   "--cnn-norms", "none,batch,instance", "--cnn-sweep-norms", "batch,group", "--no-lstm",
                                   "--no-gpt", "--why-epochs", "1", "--why-norms", "none,noisybatch", "--out",
                                   t.path().string()}),
                      0);
  for (const char* part : {"compare", "sweep", "cnn-compare", "cnn-sweep", "why"})
    BOOST_TEST(fs::exists(t.path() / part / "summary.csv"), part << "/summary.csv is missing");
  const std::string report = read_file(t.path() / "report.md");
  for (const char* s : {"## CNN: Convergence", "## CNN: Batch-size sensitivity", "## MLP and CNN side by side",
                        "| GroupNorm |", "InstanceNorm", "## Why a norm helps: no norm vs noisy BatchNorm",
                        "### Why: internal covariate shift and the landscape"})
    BOOST_TEST(report.find(s) != std::string::npos, "report.md lacks " << s);
  const auto man = nlohmann::json::parse(read_file(t.path() / "manifest.json"));
  BOOST_TEST(man["parts"].size() == 5u);
  BOOST_TEST(fs::exists(t.path() / "why" / "why_claims.csv"));
  // --no-cnn leaves it out; study refuses --arch cnn (it runs both architectures itself).
  TempDir u;
  BOOST_REQUIRE_EQUAL(run_normlab({"study", "--quiet", "--train-limit", "500", "--test-limit", "100", "--epochs", "1",
                                   "--seeds", "0", "--batch-sizes", "32", "--sweep-train-limit", "200", "--no-cnn",
                                   "--no-lstm", "--no-gpt", "--no-why", "--out", u.path().string()}),
                      0);
  BOOST_TEST(!fs::exists(u.path() / "cnn-compare"));
  BOOST_TEST(!fs::exists(u.path() / "why"));
  expect_error({"study", "--arch", "cnn", "--out", u.path().string()}, "study runs its MLP and its CNN parts itself");
}

BOOST_AUTO_TEST_CASE(train_prints_one_line_per_epoch_in_order) {
  TempDir t;
  int rc = -1;
  const std::string err =
      capture_output(2, [&] { rc = run_normlab({"train", "--quick", "--epochs", "4", "--out", t.path().string()}); });
  BOOST_REQUIRE_EQUAL(rc, 0);
  BOOST_TEST(err.find('\r') == std::string::npos, "a progress bar on a file: " << err);  // plain lines
  std::vector<std::string> epochs;
  for (const std::string& line : split_lines(err))
    if (line.rfind("epoch ", 0) == 0) epochs.push_back(line);
  BOOST_REQUIRE_EQUAL(epochs.size(), 4u);
  for (size_t i = 0; i < epochs.size(); ++i) {
    BOOST_TEST(epochs[i].rfind("epoch " + std::to_string(i + 1) + ": train loss ", 0) == 0u, epochs[i]);
    BOOST_TEST(epochs[i].find(", test acc ") != std::string::npos, epochs[i]);
  }
  // --quiet: nothing at all.
  TempDir q;
  const std::string quiet =
      capture_output(2, [&] { rc = run_normlab({"train", "--quick", "--quiet", "--out", q.path().string()}); });
  BOOST_REQUIRE_EQUAL(rc, 0);
  BOOST_TEST(quiet.empty(), quiet);
}

BOOST_AUTO_TEST_CASE(each_subcommand_writes_to_its_own_default_folder) {
  // All subcommands share one options struct: each must still default to out/<subcommand>.
  TempDir t;
  const fs::path cwd = fs::current_path();
  fs::current_path(t.path());
  struct Back {
    fs::path to;
    ~Back() { fs::current_path(to); }
  } back{cwd};
  const std::vector<std::vector<std::string>> commands = {
      {"study", "--quick", "--quiet", "--epochs", "1", "--seeds", "0", "--batch-sizes", "32"},
      {"train", "--quick", "--quiet", "--epochs", "1"},
      {"compare", "--quick", "--quiet", "--epochs", "1", "--seeds", "0"},
      {"sweep", "--quick", "--quiet", "--epochs", "1", "--seeds", "0", "--batch-sizes", "32"}};
  for (const auto& c : commands) {
    BOOST_TEST_CONTEXT(c.front()) {
      int rc = -1;
      capture_output(1, [&] { rc = run_normlab(c); });
      BOOST_TEST(rc == 0);
      const fs::path manifest = t.path() / "out" / c.front() / "manifest.json";
      BOOST_REQUIRE(fs::exists(manifest));
      const auto m = nlohmann::json::parse(read_file(manifest));
      BOOST_TEST(m["command"].get<std::string>().rfind("normlab " + c.front() + " ", 0) == 0u, m["command"]);
    }
  }
  std::vector<std::string> folders;
  for (const auto& e : fs::directory_iterator(t.path() / "out")) folders.push_back(e.path().filename().string());
  std::sort(folders.begin(), folders.end());
  BOOST_TEST((folders == std::vector<std::string>{"compare", "study", "sweep", "train"}));
}

BOOST_AUTO_TEST_CASE(version_and_help_subcommand) {
  int rc = -1;
  const std::string version = capture_output(1, [&] { rc = run_normlab({"--version"}); });
  BOOST_TEST(rc == 0);
  BOOST_TEST(version.rfind("normlab " NORMLAB_VERSION " (commit ", 0) == 0u, version);
  const std::string help = capture_output(1, [&] { rc = run_normlab({"help"}); });
  BOOST_TEST(rc == 0);
  BOOST_TEST(help.find("Usage: normlab [OPTIONS] SUBCOMMAND") != std::string::npos, help);
  for (const char* sub : {"demo", "train", "compare", "sweep", "study", "eval", "predict"}) {
    BOOST_TEST(help.find(std::string("  ") + sub + " ") != std::string::npos, sub);
    const std::string one = capture_output(1, [&] { rc = run_normlab({"help", sub}); });
    BOOST_TEST(rc == 0);
    BOOST_TEST(one == capture_output(1, [&] { run_normlab({sub, "--help"}); }), sub);
    BOOST_TEST(one.find(std::string("Usage: normlab ") + sub + " [OPTIONS]") != std::string::npos, one);
  }
  expect_error({"help", "traine"}, "traine not in {help,demo,train,compare,sweep,study,predict,eval,generate,completion}");
}

BOOST_AUTO_TEST_CASE(help_states_the_preset_defaults) {
  // Options whose default depends on the dataset or --quick say so, instead of a bare value.
  const std::vector<std::pair<std::string, std::string>> want = {
      {"--hidden", "(default: 32,32 with --quick, 256,256 on fashion-mnist, else 64,64)"},
      {"--warmup", "(default: 10 with --quick, 50 on fashion-mnist, else 0)"},
      {"--epochs", "3 with --quick"},
      {"--batch-size", "(default: 32 with --quick, "},
      {"--early-stopping", "(default: 10 on a CSV file with a validation split, else off)"},
      {"--lr", "(default: 0.001 with --optimizer adam or adamw, 0.1 with --quick, else 0.05)"},
      {"--dataset", "(default: moons with --quick, else fashion-mnist)"},
      {"--noise", "(default: 0.25 with --quick, else 0.1)"}};
  for (const char* sub : {"train", "compare", "sweep", "study"}) {
    BOOST_TEST_CONTEXT(sub) {
      int rc = -1;
      const std::string help = capture_output(1, [&] { rc = run_normlab({sub, "--help"}); });
      BOOST_TEST(rc == 0);
      BOOST_TEST(help.find("=[]") == std::string::npos, help);
      for (const auto& [flag, text] : want)
        for (const std::string& line : split_lines(help))
          if (line.find("  " + flag + " ") != std::string::npos)
            BOOST_TEST(line.find(text) != std::string::npos, line);
    }
  }
  const std::string sweep = capture_output(1, [&] { run_normlab({"sweep", "--help"}); });
  BOOST_TEST(sweep.find("(default: 2,8,32,128 with --quick, else 2,4,8,16,32,64,128,256)") != std::string::npos);
  BOOST_TEST(sweep.find("(default: 0,1,2,3,4 with --full, else 0,1,2)") != std::string::npos);
  const std::string study = capture_output(1, [&] { run_normlab({"study", "--help"}); });
  BOOST_TEST(study.find("(default: 0.1 on fashion-mnist without --quick, else 0)") != std::string::npos);
  BOOST_TEST(study.find("(default: 3 with --quick, else 5)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(validation_columns_only_with_a_validation_set) {
  TempDir none, some;
  BOOST_REQUIRE_EQUAL(run_normlab({"train", "--quick", "--quiet", "--out", none.path().string()}), 0);
  BOOST_REQUIRE_EQUAL(run_normlab({"train", "--quick", "--quiet", "--val-fraction", "0.2", "--out",
                                   some.path().string()}), 0);
  // Without a validation set (the default --val-fraction 0): no val_* columns, no NaN.
  const std::string a = read_file(none.path() / "epochs.csv"), b = read_file(some.path() / "epochs.csv");
  BOOST_TEST(a.find("val_") == std::string::npos);
  BOOST_TEST(a.find("nan") == std::string::npos);
  BOOST_TEST(read_file(none.path() / "report.md").find("No validation set") != std::string::npos);
  // With one: the columns, with numbers in them.
  BOOST_TEST(b.substr(0, b.find('\n')).find(",val_loss,val_acc,") != std::string::npos);
  BOOST_TEST(b.find("nan") == std::string::npos);
  BOOST_TEST(read_file(some.path() / "report.md").find("| val acc (%) |") != std::string::npos);
  // compare and sweep likewise.
  TempDir c;
  BOOST_REQUIRE_EQUAL(run_normlab({"compare", "--quick", "--quiet", "--seeds", "0", "--out", c.path().string()}), 0);
  BOOST_TEST(read_file(c.path() / "epochs.csv").find("val_") == std::string::npos);
  BOOST_TEST(read_file(c.path() / "report.md").find("there is no validation set") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(train_writes_a_checkpoint_with_pytorch_names) {
  TempDir t;
  BOOST_REQUIRE_EQUAL(run_normlab({"train", "--quick", "--quiet", "--norm", "batch", "--out", t.path().string()}), 0);
  const auto f = normlab::serialize::load_safetensors((t.path() / "model.safetensors").string());
  std::vector<std::string> names;
  for (const auto& [n, x] : f.tensors) names.push_back(n);
  for (const char* want : {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                           "1.num_batches_tracked", "3.weight", "6.bias"})
    BOOST_TEST((std::find(names.begin(), names.end(), want) != names.end()), want);
  BOOST_TEST(lines(t.path() / "epochs.csv") == 1u + 3u);
}

BOOST_AUTO_TEST_CASE(csv_dataset_trains) {
  TempDir t;
  const int rc = run_normlab({"train", "--quiet", "--dataset", "csv", "--csv", kFixtures + "iris_like.csv", "--label",
                              "species", "--hidden", "8", "--epochs", "2", "--batch-size", "4", "--test-fraction",
                              "0.25", "--out", t.path().string()});
  BOOST_REQUIRE_EQUAL(rc, 0);
  BOOST_TEST(fs::exists(t.path() / "epochs.csv"));
}

BOOST_AUTO_TEST_CASE(a_diverging_run_is_recorded_and_the_sweep_goes_on) {
  TempDir t;
  BOOST_REQUIRE_EQUAL(run_normlab({"sweep", "--quick", "--quiet", "--over", "lr", "--lrs", "0.1,1e7", "--norms", "none",
                                   "--seeds", "0,1", "--warmup", "0", "--out", t.path().string()}),
                      0);
  const std::string runs = read_file(t.path() / "runs.csv");
  BOOST_TEST(lines(t.path() / "runs.csv") == 1u + 4u);
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
  BOOST_TEST(read_file(t.path() / "report.md").find("diverged run") != std::string::npos);
}

// `normlab demo` succeeds and the loss it prints falls: the first and last of its "loss a -> b"
// line, and every "step ... loss" line below the first (stdout is captured in a file).
BOOST_AUTO_TEST_CASE(demo_succeeds_and_the_loss_falls) {
  int rc = -1;
  const std::string text = capture_output(1, [&] { rc = run_normlab({"demo", "--steps", "100"}); });
  BOOST_REQUIRE_EQUAL(rc, 0);
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
  TempDir t;
  const std::string out = (t.path() / "out").string();
  expect_error({"train", "--quick", "--norm", "weird", "--out", out}, "unknown norm 'weird'");
  expect_error({"train", "--quick", "--activation", "swish", "--out", out}, "unknown activation 'swish'");
  expect_error({"train", "--quick", "--dataset", "mnist3d", "--out", out}, "unknown dataset 'mnist3d'");
  expect_error({"train", "--quick", "--batch-size", "0", "--out", out}, {"--batch-size", "from 1 to", "got '0'"});

  expect_error({"train", "--quick", "--norm", "batch", "--batch-size", "1", "--out", out}, "BatchNorm needs more than one");
  expect_error({"sweep", "--quick", "--batch-sizes", "1,2", "--out", out}, "BatchNorm needs more than one");
  expect_error({"sweep", "--quick", "--full", "--out", out}, "--quick and --full cannot be used together");
  expect_error({"train", "--quick", "--threads", "-1", "--out", out}, {"--threads", "from 1 to 256", "got '-1'"});
  expect_error({"train", "--quick", "--threads", "0", "--out", out}, {"--threads", "from 1 to 256", "got '0'"});
  expect_error({"train", "--dataset", "csv", "--csv", kFixtures + "does_not_exist.csv", "--label", "y", "--out", out},
               "does_not_exist.csv");
  expect_error({"train", "--dataset", "csv", "--csv", kFixtures + "iris_like.csv", "--out", out}, "--label");
  // --csv alone names the data set (also with --quick, whose default data set is moons).
  expect_error({"train", "--quick", "--csv", "x.csv", "--out", out}, "--dataset csv needs --label COLUMN");
  expect_error({"train", "--quick", "--norm", "group", "--groups", "5", "--out", out}, "divisible by 5");
  // Flags the other flags would make meaningless: both named.
  expect_error({"sweep", "--quick", "--over", "lr", "--batch-sizes", "2,4", "--out", out},
               "--batch-sizes cannot be used with --over lr");
  expect_error({"sweep", "--quick", "--over", "lr", "--reference-batch", "64", "--out", out},
               "--reference-batch cannot be used with --over lr");
  expect_error({"sweep", "--quick", "--over", "batch", "--lrs", "0.1,1", "--out", out},
               "--lrs cannot be used with --over batch");
  expect_error({"sweep", "--quick", "--lrs", "0.1,1", "--out", out},
               "--lrs cannot be used with --over batch (the default)");
  expect_error({"sweep", "--quick", "--batch-size", "16", "--out", out},
               "--batch-size cannot be used with --over batch");
  expect_error({"sweep", "--full", "--dataset", "moons", "--out", out}, "--full cannot be used with --dataset moons");
  expect_error({"sweep", "--full", "--dataset", "csv", "--csv", kFixtures + "iris_like.csv", "--label", "species",
                "--out", out},
               "--full cannot be used with --dataset csv");
  expect_error({"sweep", "--full", "--over", "lr", "--out", out}, "--full cannot be used with --over lr");
  // A class that the split of one CSV file holds out of the training part: the file, the line, the class.
  const std::string rare = std::string(NORMLAB_SOURCE_DIR) + "/tests/data/fixtures/rare_class.csv";
  {
    // rare_class.csv: 11 rows, "rare" only in row 9 (line 11); --test-fraction 0.25 holds out the
    // last 3 positions of the seed's permutation. Find a seed that holds row 9 out.
    uint64_t seed = 0;
    for (;; ++seed) {
      const auto p = normlab::data::permutation(11, seed);
      if (std::find(p.begin() + 8, p.end(), 9) != p.end()) break;
    }
    expect_error({"train", "--dataset", "csv", "--csv", rare, "--label", "label", "--test-fraction", "0.25",
                  "--data-seed", std::to_string(seed), "--hidden", "4", "--batch-size", "2", "--out", out},
                 {rare + ": line 11", "class \"rare\"", "test part", "--test-fraction"});
  }
  BOOST_TEST(!fs::exists(out), "an output folder was created by a failed command");
  // An output folder that cannot be created: a path below a regular file.
  TempDir f;
  std::ofstream(f.path() / "file") << "x";
  expect_error({"train", "--quick", "--out", (f.path() / "file" / "sub").string()}, "cannot write to output folder");
  // Usage errors (unknown flag, bad value, no subcommand) are usage errors too.
  expect_error({"train", "--no-such-flag"}, "--no-such-flag");
  expect_error({"sweep", "--over", "width"}, "--over");
  expect_error({}, "A subcommand is required");
  expect_error({"trian", "--quick"},
               std::vector<std::string>{"unknown subcommand 'trian': did you mean 'train'?", "compare, sweep"});
  expect_error({"sweeep"}, "did you mean 'sweep'?");
  expect_error({"xyzzy-plugh"}, "unknown subcommand 'xyzzy-plugh' (the subcommands: help, demo, train");
}

// The exit status main() gives for a command, and what it prints as the error.
std::pair<int, std::string> status_of(const std::vector<std::string>& args) {
  try {
    return {run_normlab(args), ""};
  } catch (const normlab::experiments::UsageError& e) {
    return {normlab::experiments::kExitUsage, e.what()};
  } catch (const normlab::Error& e) {
    return {normlab::experiments::kExitError, e.what()};
  }
}

BOOST_AUTO_TEST_CASE(bad_values_are_usage_errors_naming_the_flag_before_anything_is_written) {
  TempDir t;
  const std::string out = (t.path() / "out").string();
  // {arguments, what the message must contain}: every value that once crashed, overflowed or was
  // taken silently.
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"train", "--dataset", "moons", "--batch-size", "0"}, {"--batch-size", "got '0'"}},  // once SIGFPE
      {{"compare", "--dataset", "moons", "--batch-size", "0"}, {"--batch-size", "got '0'"}},
      {{"study", "--dataset", "moons", "--batch-size", "0"}, {"--batch-size", "got '0'"}},
      {{"sweep", "--dataset", "moons", "--over", "lr", "--batch-size", "0"}, {"--batch-size", "got '0'"}},
      {{"train", "--quick", "--batch-size", "99999999999999999999"}, {"--batch-size", "'99999999999999999999'"}},
      {{"train", "--quick", "--epochs", "9223372036854775807"}, {"--epochs", "from 1 to 1000000"}},
      {{"train", "--quick", "--stats-every", "-1"}, {"--stats-every", "got '-1'"}},
      {{"compare", "--quick", "--target", "nan"}, {"--target", "in [0, 1]", "got 'nan'"}},
      {{"compare", "--quick", "--seeds", ""}, {"--seeds", "got ''"}},
      {{"train", "--quick", "--threads", "2000"}, {"--threads", "from 1 to 256"}},
      {{"train", "--quick", "--samples", "1e13"}, {"--samples", "got '1e13'"}},
      {{"train", "--quick", "--out", ""}, {"--out", "must not be empty"}},
      {{"train", "--quick", "--momentum", "nan"}, {"--momentum", "in [0, 1)"}},
      {{"train", "--quick", "--momentum", "1", "--nesterov"}, {"--momentum", "got '1'"}},
      {{"train", "--quick", "--weight-decay", "-1"}, {"--weight-decay", "of at least 0"}},
      {{"train", "--quick", "--weight-decay", "nan"}, {"--weight-decay", "got 'nan'"}},
      {{"train", "--quick", "--momentum", "0", "--nesterov"}, {"Nesterov momentum requires a momentum"}},
      {{"train", "--quick", "--step-gamma", "nan"}, {"--step-gamma", "above 0"}},
      {{"train", "--quick", "--data-dir", "/tmp"}, {"--data-dir goes with --dataset fashion-mnist"}},
      {{"train", "--quick", "--norm", "weird"}, {"unknown norm 'weird'"}},
      // Convolutional models: flags of the other architecture, image shapes, layer strings.
      {{"train", "--quick", "--arch", "cnn"}, {"--arch cnn needs the image shape", "--image-shape C,H,W"}},
      {{"train", "--quick", "--arch", "resnet"}, {"--arch", "resnet"}},
      {{"train", "--quick", "--model", "conv8"}, {"--model goes with --arch cnn", "--arch mlp (the default)"}},
      {{"train", "--quick", "--image-shape", "1,1,2"}, {"--image-shape goes with --arch cnn"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--hidden", "4"}, {"--hidden goes with --arch mlp or lstm, not --arch cnn"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,2"}, {"--image-shape"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,2,2"}, {"holds 4 values", "2 features"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv4k3"},
       {"layer 1 'conv4k3'", "larger than the padded input", "1x1x2"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv4k1-maxpol2"},
       {"layer 2 'maxpol2'", "unknown layer"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "flatten-conv4k1"},
       {"layer 2 'conv4k1'", "needs image activations", "2 at conv4k1"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv4k1--act"}, {"layer 2 is empty"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv4x1"}, {"layer 1 'conv4x1'", "unexpected 'x1'"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv6k1g4"}, {"groups 4 must divide"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "norm-conv4k1"}, {"must follow a conv or linear"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv6k1-norm", "--norm", "group",
        "--groups", "4"},
       {"layer 2 'norm'", "GroupNorm with 4 groups", "channel counts", "got 6"}},
      {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv4k1s2-norm", "--norm", "instance"},
       {"instance norm needs more than one value per channel"}},
      {{"train", "--quick", "--norm", "instance"}, {"instance norm", "--arch cnn"}},
  };
  for (auto [args, needles] : cases) {
    args.insert(args.end(), {"--out", out, "--quiet"});
    BOOST_TEST_CONTEXT("normlab " << [&] { std::string s; for (auto& a : args) s += a + " "; return s; }()) {
      const auto [status, message] = status_of(args);
      BOOST_TEST(status == normlab::experiments::kExitUsage);
      for (const auto& n : needles) BOOST_TEST(message.find(n) != std::string::npos, "lacks \"" << n << "\": " << message);
      BOOST_TEST(!fs::exists(out), "the failed command created its output folder");
    }
  }
}

// Each case: the arguments (--out and --quiet added), the exit status, what the message must say.
struct RefusedCase {
  std::vector<std::string> args;
  int status;
  std::vector<std::string> needles;
};

void expect_refused(const std::vector<RefusedCase>& cases, const std::string& out) {
  for (RefusedCase c : cases) {
    c.args.insert(c.args.end(), {"--out", out, "--quiet"});
    BOOST_TEST_CONTEXT("normlab " << [&] { std::string s; for (auto& a : c.args) s += a + " "; return s; }()) {
      const auto [status, message] = status_of(c.args);
      BOOST_TEST(status == c.status);
      for (const auto& n : c.needles) BOOST_TEST(message.find(n) != std::string::npos, "lacks \"" << n << "\": " << message);
      BOOST_TEST(!fs::exists(out), "the failed command created its output folder");
    }
  }
}

BOOST_AUTO_TEST_CASE(empty_list_items_are_usage_errors_naming_the_flag_and_the_position) {
  // CLI11 drops the empty items of a comma-separated list: "--hidden 16," once trained 2-16-2.
  TempDir t;
  const int usage = normlab::experiments::kExitUsage;
  expect_refused({{{"train", "--quick", "--hidden", "16,"}, usage, {"--hidden '16,'", "item 2 of 2 is empty"}},
                  {{"train", "--quick", "--hidden", "16,,16"}, usage, {"--hidden '16,,16'", "item 2 of 3 is empty"}},
                  {{"train", "--quick", "--hidden=,16"}, usage, {"--hidden ',16'", "item 1 of 2 is empty"}},
                  {{"sweep", "--quick", "--batch-sizes", "8,"}, usage, {"--batch-sizes '8,'", "item 2 of 2"}},
                  {{"sweep", "--quick", "--over", "lr", "--lrs", "0.1,"}, usage, {"--lrs '0.1,'", "item 2 of 2"}},
                  {{"compare", "--quick", "--norms", "batch,,layer"}, usage, {"--norms", "item 2 of 3"}},
                  {{"compare", "--quick", "--seeds", "0,1,"}, usage, {"--seeds '0,1,'", "item 3 of 3"}}},
                 (t.path() / "out").string());
}

BOOST_AUTO_TEST_CASE(a_batch_larger_than_the_training_set_is_refused) {
  // moons, 400 samples: 320 train at --test-fraction 0.2. The batch was once recorded as given, and
  // the sweep scaled the learning rate by it (x 780 at batch 100000).
  TempDir t;
  const int usage = normlab::experiments::kExitUsage;
  const std::vector<std::string> moons{"--dataset", "moons", "--samples", "400"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), moons.begin(), moons.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  expect_refused({{with({"train"}, {"--batch-size", "1000"}), usage,
                   {"--batch-size 1000 is larger than the training set (320 samples)", "at most 320"}},
                  {with({"compare"}, {"--batch-size", "321"}), usage, {"--batch-size 321", "(320 samples)"}},
                  {with({"sweep"}, {"--batch-sizes", "8,100000"}), usage, {"--batch-sizes 100000", "(320 samples)"}},
                  {with({"sweep"}, {"--over", "lr", "--batch-size", "500"}), usage, {"--batch-size 500"}},
                  {with({"study"}, {"--sweep-train-limit", "100", "--batch-sizes", "8,128"}), usage,
                   {"--batch-sizes 128 is larger than the sweep's training set (100 samples)"}}},
                 (t.path() / "out").string());
  // The whole training set as one batch is a batch.
  BOOST_TEST(run_normlab_quiet(with({"train"}, {"--batch-size", "320", "--epochs", "1", "--hidden", "4", "--out",
                                                (t.path() / "ok").string()})) == 0);
}

BOOST_AUTO_TEST_CASE(fractions_that_round_to_no_sample_say_what_they_gave) {
  // 4 samples at --val-fraction 0.1 once made no validation set while the report said
  // "--val-fraction 0"; a 2-row file at --test-fraction 0.2 asked for "a test fraction above 0".
  TempDir t;
  write_file(t.path() / "two.csv", "x,y\n1,a\n2,b\n");
  const int usage = normlab::experiments::kExitUsage;
  expect_refused({{{"train", "--dataset", "moons", "--samples", "4", "--val-fraction", "0.1"}, usage,
                   {"--val-fraction 0.1 of 4 samples rounds to 0 validation samples", "0.1 x 4 = 0.4",
                    "give --val-fraction 0.13 or more"}},
                  {{"train", "--csv", (t.path() / "two.csv").string(), "--label", "y"}, usage,
                   {"--test-fraction 0.2 of 2 samples rounds to 0 test samples", "0.2 x 2 = 0.4",
                    "give --test-fraction 0.25 or more"}}},
                 (t.path() / "out").string());
}

BOOST_AUTO_TEST_CASE(a_csv_file_of_one_class_is_refused_naming_the_column_and_the_value) {
  TempDir t;
  std::string rows = "x,kind\n";
  for (int i = 0; i < 20; ++i) rows += std::to_string(i) + ",cat\n";
  write_file(t.path() / "one.csv", rows);
  const auto [status, message] = status_of({"train", "--csv", (t.path() / "one.csv").string(), "--label", "kind",
                                            "--quiet", "--out", (t.path() / "out").string()});
  BOOST_TEST(status != 0);
  for (const char* n : {"one.csv", "label column \"kind\" holds one value, \"cat\"", "at least two classes"})
    BOOST_TEST(message.find(n) != std::string::npos, "lacks \"" << n << "\": " << message);
  BOOST_TEST(!fs::exists(t.path() / "out"));
}

BOOST_AUTO_TEST_CASE(sizes_that_cannot_train_name_the_flag_and_the_layer_before_allocating) {
  // conv8k3p99999 once failed with "out of memory: could not allocate 12803072184320 bytes".
  TempDir t;
  const int usage = normlab::experiments::kExitUsage;
  expect_refused({{{"train", "--quick", "--schedule", "step", "--step-every", "0"}, usage, {"--step-every", "got '0'"}},
                  {{"train", "--quick", "--schedule", "step"}, usage, {"--schedule step needs --step-every N"}},
                  {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv8k3p99999"}, usage,
                   {"--model: layer 1 'conv8k3p99999'", "8x199997x199998", "less padding"}},
                  {{"train", "--quick", "--arch", "cnn", "--image-shape", "1,1,2", "--model", "conv64k1-conv9999999k1"}, usage,
                   {"--model: layer 2 'conv9999999k1'", "its weights would be 9999999x64x1x1"}},
                  {{"train", "--quick", "--hidden", "1048576,1048576"}, usage,
                   {"--hidden: the layer of width 1048576", "its weights would be 1048576x1048576"}}},
                 (t.path() / "out").string());
}

BOOST_AUTO_TEST_CASE(unknown_norms_are_refused_in_every_norm_flag) {
  // study --quick has no CNN part, and once ran without a word about --cnn-norms foo.
  TempDir t;
  const int usage = normlab::experiments::kExitUsage;
  expect_refused({{{"study", "--quick", "--cnn-norms", "foo"}, usage, {"--cnn-norms", "unknown norm 'foo'"}},
                  {{"study", "--quick", "--cnn-sweep-norms", "batch,foo"}, usage, {"--cnn-sweep-norms", "unknown norm 'foo'"}},
                  {{"study", "--quick", "--norms", "foo"}, usage, {"--norms", "unknown norm 'foo'"}},
                  {{"sweep", "--quick", "--norms", "batch,foo"}, usage, {"--norms", "unknown norm 'foo'"}},
                  {{"compare", "--quick", "--norms", "foo"}, usage, {"--norms", "unknown norm 'foo'"}},
                  {{"train", "--quick", "--norm", "foo"}, usage, {"--norm", "unknown norm 'foo'"}}},
                 (t.path() / "out").string());
}

BOOST_AUTO_TEST_CASE(data_flags_follow_one_rule_on_every_data_set) {
  // A CSV data set without --label, or an unknown data set, is a usage error (exit 2, once 1 for
  // --label); --train-limit above the training split is refused on synthetic sets and CSV files as
  // on Fashion-MNIST (once taken silently as "all").
  TempDir t;
  const int usage = normlab::experiments::kExitUsage;
  const std::string csv = kFixtures + "iris_like.csv";  // 60 rows: 45 train at --test-fraction 0.25
  std::vector<RefusedCase> cases;
  for (const char* sub : {"train", "compare", "sweep", "study"}) {
    cases.push_back({{sub, "--dataset", "mnist"}, usage, {"unknown dataset 'mnist'"}});
    cases.push_back({{sub, "--csv", csv}, usage, {"--dataset csv needs --label COLUMN"}});
    cases.push_back({{sub, "--dataset", "moons", "--samples", "400", "--train-limit", "500"}, usage,
                     {"--train-limit 500 is larger than the training split (320 samples)"}});
    cases.push_back({{sub, "--dataset", "moons", "--samples", "400", "--test-limit", "81"}, usage,
                     {"--test-limit 81 is larger than the test split (80 samples)"}});
  }
  cases.push_back({{"train", "--csv", csv, "--label", "species", "--test-fraction", "0.25", "--val-fraction", "0",
                    "--train-limit", "46"}, usage, {"--train-limit 46", "(45 samples)"}});
  if (fs::exists("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz")) {  // Debian's dataset-fashion-mnist
    cases.push_back({{"train", "--train-limit", "60001"}, usage,
                     {"--train-limit 60001 is larger than the fashion-mnist training split (60000 samples)"}});
    cases.push_back({{"train", "--test-limit", "10001"}, usage,
                     {"--test-limit 10001 is larger than the fashion-mnist test split (10000 samples)"}});
  }
  expect_refused(cases, (t.path() / "out").string());
}

BOOST_AUTO_TEST_CASE(the_recorded_command_line_pastes_back_into_a_shell) {
  // --csv-sep ' ' was once recorded unquoted. Every argument that a shell would split, expand or
  // glob is recorded in single quotes; the shell reads the recorded line back as the arguments given.
  TempDir t;
  write_file(t.path() / "spaces.csv", "a b label\n1 2 x\n2 1 y\n3 3 x\n4 2 y\n5 1 x\n6 3 y\n7 2 x\n8 1 y\n9 2 x\n0 3 y\n");
  const std::string out = (t.path() / "it's $HOME *").string();
  const std::vector<std::string> args{"train", "--csv", (t.path() / "spaces.csv").string(), "--csv-sep", " ", "--label",
                                      "label", "--csv-na", "?,-", "--hidden", "4", "--epochs", "1", "--batch-size",
                                      "2", "--test-fraction", "0.3", "--quiet", "--out", out};
  BOOST_REQUIRE(run_normlab(args) == 0);
  const std::string line = nlohmann::json::parse(read_file(fs::path(out) / "manifest.json"))["command"];
  BOOST_TEST(line.find("--csv-sep ' '") != std::string::npos, line);
  BOOST_TEST(line.find("--hidden 4 --epochs 1") != std::string::npos, line);  // plain words stay plain
  BOOST_TEST(read_file(fs::path(out) / "report.md").find("Command: `" + line + "`") != std::string::npos);
  const auto shell = normlab::test::run_command("set -- " + line + "; for a in \"$@\"; do printf '%s\\n' \"$a\"; done");
  BOOST_REQUIRE(shell.status == 0);
  std::vector<std::string> want{"normlab"};
  want.insert(want.end(), args.begin(), args.end());
  BOOST_TEST(split_lines(shell.output) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(edited_checkpoints_are_refused_naming_the_file_and_what_is_wrong) {
  // An unknown norm in the metadata once read "unknown norm 'foo'" as if a flag were wrong; an
  // edited "model" field was ignored; NaN weights were evaluated to "accuracy 33.33%, loss nan".
  TempDir t;
  const std::string dir = (t.path() / "m").string();
  BOOST_REQUIRE(run_normlab({"train", "--quick", "--epochs", "1", "--quiet", "--out", dir}) == 0);
  const auto good = normlab::serialize::load_safetensors(dir + "/model.safetensors");
  BOOST_REQUIRE(good.metadata.at("model") == "2-32-32-2");
  const auto edited = [&](const std::string& name, const std::function<void(normlab::serialize::SafetensorsFile&)>& edit) {
    normlab::serialize::SafetensorsFile f = good;
    for (auto& [n, x] : f.tensors) x = x.clone();
    edit(f);
    const std::string path = (t.path() / name).string();
    normlab::serialize::save_safetensors(path, f.tensors, f.metadata);
    return path;
  };
  const auto tensor = [](normlab::serialize::SafetensorsFile& f, const std::string& name) {
    for (auto& [n, x] : f.tensors)
      if (n == name) return x;
    throw std::runtime_error("no tensor " + name);
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {edited("norm.safetensors", [](auto& f) { f.metadata["norm"] = "foo"; }),
       {"norm.safetensors: metadata \"norm\" is \"foo\"", "expected one of: none, batch"}},
      {edited("act.safetensors", [](auto& f) { f.metadata["activation"] = "swish"; }),
       {"act.safetensors: metadata \"activation\" is \"swish\"", "relu"}},
      {edited("model.safetensors", [](auto& f) { f.metadata["model"] = "2-64-64-2"; }),
       {"model.safetensors: metadata \"model\" is \"2-64-64-2\"", "tensor 0.weight is [32, 2] where that model's is [64, 2]"}},
      {edited("model3.safetensors", [](auto& f) { f.metadata["model"] = "2-32-32-32-2"; }),
       {"metadata \"model\" is \"2-32-32-32-2\"", "tensor 4.weight is [2, 32] where that model's is [32, 32]"}},
      {edited("nan.safetensors", [&](auto& f) { tensor(f, "2.weight").set_flat(5, std::nan("")); }),
       {"nan.safetensors: the tensor 2.weight holds NaN (element 5 of 1024)"}},
      {edited("inf.safetensors", [&](auto& f) { tensor(f, "4.bias").set_flat(1, -INFINITY); }),
       {"inf.safetensors: the tensor 4.bias holds an infinite value"}},
  };
  for (const auto& [path, needles] : cases)
    BOOST_TEST_CONTEXT(path) {
      const auto [status, message] = status_of({"eval", "--checkpoint", path, "--quiet", "--out", (t.path() / "e").string()});
      BOOST_TEST(status == normlab::experiments::kExitError);
      for (const auto& n : needles) BOOST_TEST(message.find(n) != std::string::npos, "lacks \"" << n << "\": " << message);
      BOOST_TEST(!fs::exists(t.path() / "e"));
    }
  // predict too, on a CSV model.
  const std::string csv = kFixtures + "iris_like.csv";
  BOOST_REQUIRE(run_normlab({"train", "--csv", csv, "--label", "species", "--hidden", "4", "--epochs", "1",
                             "--batch-size", "8", "--quiet", "--out", (t.path() / "c").string()}) == 0);
  auto f = normlab::serialize::load_safetensors((t.path() / "c" / "model.safetensors").string());
  for (auto& [n, x] : f.tensors)
    if (n == "0.weight") x.set_flat(0, INFINITY);
  const std::string bad = (t.path() / "c" / "inf.safetensors").string();
  normlab::serialize::save_safetensors(bad, f.tensors, f.metadata);
  const auto [status, message] = status_of({"predict", "--checkpoint", bad, "--csv", csv, "--quiet", "--out",
                                            (t.path() / "p.csv").string()});
  BOOST_TEST(status == normlab::experiments::kExitError);
  BOOST_TEST(message.find("inf.safetensors: the tensor 0.weight holds an infinite value") != std::string::npos, message);
  BOOST_TEST(!fs::exists(t.path() / "p.csv"));
}

BOOST_AUTO_TEST_CASE(errors_name_the_out_given_and_print_no_raw_bytes) {
  // An output folder that cannot be made was named by its hidden partial sibling
  // (.sub.normlab-partial-PID); a corrupt checkpoint header printed its raw 0xff byte.
  TempDir t;
  write_file(t.path() / "file", "x");
  const std::string out = (t.path() / "file" / "sub").string();
  const auto [status, message] = status_of({"train", "--quick", "--quiet", "--out", out});
  BOOST_TEST(status == normlab::experiments::kExitError);
  BOOST_TEST(message.find("cannot write to output folder " + out + " (--out): Not a directory") != std::string::npos, message);
  BOOST_TEST(message.find("normlab-partial") == std::string::npos, message);
  const std::string header = "{\"a\":\xff}";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  write_file(t.path() / "ff.safetensors", bytes + header);
  const auto r = normlab::test::run_command(std::string(NORMLAB_BINARY) + " eval --checkpoint '" +
                                            (t.path() / "ff.safetensors").string() + "' --out '" +
                                            (t.path() / "e").string() + "' 2>&1");
  BOOST_TEST(r.status == normlab::experiments::kExitError);
  BOOST_TEST(r.output.find("ff.safetensors") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("\\xff") != std::string::npos, r.output);
  BOOST_TEST(r.output.find('\xff') == std::string::npos);
  // UTF-8 text (a file name) stays as it is; control characters and broken sequences are escaped.
  BOOST_TEST(normlab::experiments::printable("donn\xc3\xa9" "es.csv: a\tb\n") == "donn\xc3\xa9" "es.csv: a\tb\n");
  BOOST_TEST(normlab::experiments::printable("x\x01y\x1b[2Jz\xc3") == "x\\x01y\\x1b[2Jz\\xc3");
}

BOOST_AUTO_TEST_CASE(flags_that_cannot_apply_are_usage_errors_in_every_subcommand) {
  // Each flag below would be silently ignored with the rest of its command line: every subcommand
  // that has the flag refuses it, naming it and why, before anything is written.
  TempDir t;
  const std::string out = (t.path() / "out").string();
  const std::string csv = kFixtures + "iris_like.csv";
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {{"--dataset", "moons", "--csv-test", csv}, {"--csv-test goes with --dataset csv", "'moons'"}},
      {{"--dataset", "moons", "--label", "y"}, {"--label goes with --dataset csv"}},
      {{"--dataset", "moons", "--csv-sep", ";"}, {"--csv-sep goes with --dataset csv"}},
      {{"--csv-no-header"}, {"--csv-no-header goes with --dataset csv", "'fashion-mnist'"}},
      {{"--dataset", "moons", "--csv-drop", "id"}, {"--csv-drop goes with --dataset csv"}},
      {{"--dataset", "moons", "--missing", "mean"}, {"--missing goes with --dataset csv"}},
      {{"--dataset", "moons", "--csv-na", "?"}, {"--csv-na goes with --dataset csv"}},
      {{"--dataset", "moons", "--categorical", "auto"}, {"--categorical goes with --dataset csv"}},
      {{"--dataset", "spirals", "--csv", csv}, {"--csv goes with --dataset csv", "'spirals'"}},
      {{"--samples", "100"}, {"--samples sets a synthetic data set", "'fashion-mnist', the default"}},
      {{"--noise", "0.2"}, {"--noise sets a synthetic data set", "'fashion-mnist'"}},
      {{"--quick", "--csv", csv, "--label", "species", "--noise", "0.2"}, {"--noise", "'csv', named by --csv"}},
      {{"--dataset", "moons", "--data-dir", "/tmp"}, {"--data-dir goes with --dataset fashion-mnist", "'moons'"}},
      {{"--test-fraction", "0.2"}, {"--test-fraction", "fashion-mnist has its own test set"}},
      {{"--csv", csv, "--label", "species", "--csv-test", csv, "--test-fraction", "0.2"},
       {"--test-fraction cannot be used with --csv-test"}},
      {{"--quick", "--step-every", "10"}, {"--step-every goes with --schedule step", "'cosine', the default"}},
      {{"--quick", "--schedule", "none", "--step-gamma", "0.5"}, {"--step-gamma goes with --schedule step", "'none'"}},
      {{"--quick", "--groups", "2"}, {"--groups", "no run uses GroupNorm"}},
      {{"--quick", "--full"}, {"--quick and --full"}},
  };
  for (const char* sub : {"train", "compare", "sweep", "study"})
    for (const Case& c : cases) {
      std::vector<std::string> args{sub};
      args.insert(args.end(), c.args.begin(), c.args.end());
      if (std::string(sub) != "sweep" && c.args.back() == "--full") continue;  // --full: sweep only
      args.insert(args.end(), {"--out", out, "--quiet"});
      BOOST_TEST_CONTEXT("normlab " << [&] { std::string s; for (auto& a : args) s += a + " "; return s; }()) {
        const auto [status, message] = status_of(args);
        BOOST_TEST(status == normlab::experiments::kExitUsage);
        for (const auto& needle : c.needles)
          BOOST_TEST(message.find(needle) != std::string::npos, "lacks \"" << needle << "\": " << message);
        BOOST_TEST(!fs::exists(out));
      }
    }
  // The same flags where they apply are accepted (parsed and checked; nothing is trained).
  const std::vector<std::vector<std::string>> accepted = {
      {"train", "--csv", csv, "--label", "species", "--train-limit", "20", "--test-limit", "10"},
      {"train", "--quick", "--csv", csv, "--label", "species"},
      {"train", "--csv", kFixtures + "sklearn_layout.csv", "--csv-skip-rows", "1", "--csv-no-header", "--label", "4"},
      {"train", "--csv", kFixtures + "semicolons.csv", "--csv-sep", ";", "--csv-comment", "#", "--label", "species"},
      {"train", "--quick", "--norm", "group", "--groups", "2"},
      {"compare", "--quick", "--norms", "none,group", "--groups", "2"},
      {"study", "--groups", "4"},  // the study's CNN part runs GroupNorm
      {"train", "--quick", "--schedule", "step", "--step-every", "10", "--step-gamma", "0.5"},
      {"sweep", "--quick", "--samples", "500", "--noise", "0.3"},
      {"sweep", "--full", "--data-dir", "/usr/share/datasets/fashion-mnist"},
  };
  for (std::vector<std::string> args : accepted) {
    args.insert(args.begin(), "normlab");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    BOOST_CHECK_NO_THROW(normlab::experiments::check_command_line(static_cast<int>(argv.size()), argv.data()));
  }
}

BOOST_AUTO_TEST_CASE(sample_limits_apply_to_csv_files_and_synthetic_sets) {
  // --train-limit/--test-limit once worked on Fashion-MNIST only (a CSV file trained on all rows).
  TempDir t;
  const std::string csv = kFixtures + "iris_like.csv";  // 60 rows: 45 train / 15 test at --test-fraction 0.25
  BOOST_TEST(run_normlab({"train", "--csv", csv, "--label", "species", "--test-fraction", "0.25", "--train-limit", "30",
                          "--test-limit", "10", "--hidden", "8", "--epochs", "1", "--batch-size", "10", "--val-fraction",
                          "0", "--quiet",
                          "--out", (t.path() / "csv").string()}) == 0);
  const auto m = nlohmann::json::parse(read_file(t.path() / "csv" / "manifest.json"));
  BOOST_TEST(m["dataset"].get<std::string>().find("(30 train / 0 validation / 10 test") != std::string::npos, m["dataset"]);
  BOOST_TEST(run_normlab({"train", "--dataset", "moons", "--samples", "400", "--train-limit", "100", "--test-limit",
                          "20", "--epochs", "1", "--batch-size", "20", "--hidden", "8", "--quiet", "--out",
                          (t.path() / "moons").string()}) == 0);
  const auto m2 = nlohmann::json::parse(read_file(t.path() / "moons" / "manifest.json"));
  BOOST_TEST(m2["dataset"].get<std::string>().find("(100 train / 0 validation / 20 test") != std::string::npos, m2["dataset"]);
}

BOOST_AUTO_TEST_CASE(reports_say_what_a_short_run_measured) {
  // One epoch and one seed: "1 epoch", the final accuracy is that epoch's, no "± std"; a target no
  // run reaches shows "-" (never "nan"); norms that reach it at the same epoch end are a tie, not
  // "fastest: the first of them".
  TempDir t;
  const auto report = [&](const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--quick", "--quiet", "--epochs", "1", "--seeds", "0", "--out", (t.path() / args[0]).string()});
    BOOST_REQUIRE(run_normlab(a) == 0);
    return read_file(t.path() / args[0] / "report.md");
  };
  const std::string unreached = report({"compare", "--target", "0.9999"});
  BOOST_TEST(unreached.find("batch 32, 1 epoch, ") != std::string::npos, unreached);
  BOOST_TEST(unreached.find("1 seed per norm") != std::string::npos);
  BOOST_TEST(unreached.find("| 0/1 | - | - |") != std::string::npos, unreached);
  BOOST_TEST(unreached.find("nan") == std::string::npos);
  BOOST_TEST(unreached.find("No norm reached 99.99% in every seed") != std::string::npos);
  const std::string tie = report({"compare", "--target", "0.5"});
  BOOST_TEST(tie.find("No norm, BatchNorm and LayerNorm reach 50% in every seed after the same number of steps") !=
             std::string::npos, tie);
  BOOST_TEST(tie.find("Fastest") == std::string::npos);
  const std::string sweep = report({"sweep", "--batch-sizes", "8,32"});
  BOOST_TEST(sweep.find("1 epoch per run") != std::string::npos, sweep);
  BOOST_TEST(sweep.find("Final accuracy = test accuracy after its one epoch; one seed: no interval, in %.") !=
             std::string::npos, sweep);
  BOOST_TEST(sweep.find("epochs per run") == std::string::npos);
  // One seed: no interval in any cell, and no difference is claimed as tested.
  BOOST_TEST(sweep.find("±") == std::string::npos, sweep);
  BOOST_TEST(unreached.find("±") == std::string::npos, unreached);
  BOOST_TEST(sweep.find("distinguishabl") == std::string::npos, sweep);
  BOOST_TEST(sweep.find("is tested") != std::string::npos, sweep);
  BOOST_TEST(unreached.find("With one seed there is no interval and no test") != std::string::npos, unreached);
}

BOOST_AUTO_TEST_CASE(a_checkpoint_records_its_data_and_predict_uses_it) {
  // model.safetensors holds what a user needs to use the model elsewhere: the classes in logit
  // order, the feature columns in input order, the training mean and std, the label column.
  TempDir t;
  const std::string csv = kFixtures + "iris_like.csv";
  const fs::path dir = t.path() / "iris";
  BOOST_REQUIRE(run_normlab({"train", "--csv", csv, "--label", "species", "--norm", "group", "--groups", "4",
                             "--hidden", "8", "--epochs", "3", "--batch-size", "8", "--quiet", "--out",
                             dir.string()}) == 0);
  const auto md = normlab::serialize::load_safetensors((dir / "model.safetensors").string()).metadata;
  BOOST_TEST(md.at("class_names") == R"(["setosa","versicolor","virginica"])");
  BOOST_TEST(md.at("feature_names") == R"(["sepal_length","sepal_width","petal_length","petal_width"])");
  BOOST_TEST(md.at("label") == "species");
  BOOST_TEST(md.at("dataset") == "csv");
  BOOST_TEST(md.at("task") == "classification");
  BOOST_TEST(md.at("norm.num_groups") == "4");
  BOOST_TEST(md.at("normlab") == NORMLAB_VERSION);
  const auto pre = nlohmann::json::parse(md.at("preprocessing"));
  BOOST_TEST(pre["mean"].size() == 4u);
  BOOST_TEST(pre["mean"][0].get<double>() > 5.0);  // sepal length in cm: the raw scale, recorded
  BOOST_TEST(pre["std"][0].get<double>() > 0.1);
  const auto manifest = nlohmann::json::parse(read_file(dir / "manifest.json"));
  BOOST_TEST(manifest["data"]["preprocessing"]["mean"] == pre["mean"]);
  BOOST_TEST(manifest["data"]["class_names"].size() == 3u);
  const auto m = normlab::experiments::load_saved_model((dir / "model.safetensors").string());
  BOOST_TEST(m.spec.norm == "group");
  BOOST_TEST(m.spec.groups == 4);
  BOOST_TEST((m.spec.hidden == std::vector<int64_t>{8}));

  // predict: with the label column the accuracy; without it, the same probabilities.
  BOOST_TEST(run_normlab({"predict", "--checkpoint", (dir / "model.safetensors").string(), "--csv", csv, "--out",
                          (dir / "p.csv").string(), "--quiet"}) == 0);
  const auto with_label = split_lines(read_file(dir / "p.csv"));
  BOOST_TEST(with_label.size() == 61u);
  BOOST_TEST(with_label[0] == "line,predicted,label,p_setosa,p_versicolor,p_virginica");
  {  // the same rows without the label column, the features in another order
    std::ofstream f(dir / "nolabel.csv");
    f << "petal_width,sepal_length,sepal_width,petal_length\n";
    const auto lines = split_lines(read_file(csv));
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      std::vector<std::string> c;
      std::stringstream ss(line);
      for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
      f << c[3] << "," << c[0] << "," << c[1] << "," << c[2] << "\n";
    }
  }
  BOOST_TEST(run_normlab({"predict", "--checkpoint", (dir / "model.safetensors").string(), "--csv",
                          (dir / "nolabel.csv").string(), "--out", (dir / "q.csv").string(), "--quiet"}) == 0);
  const auto without = split_lines(read_file(dir / "q.csv"));
  BOOST_REQUIRE(without.size() == 61u);
  BOOST_TEST(without[0] == "line,predicted,p_setosa,p_versicolor,p_virginica");
  for (size_t i = 1; i < without.size(); ++i) {  // drop the label column of with_label
    std::string w = with_label[i];
    const size_t a = w.find(',', w.find(',') + 1), b = w.find(',', a + 1);
    BOOST_TEST(without[i] == w.erase(a, b - a), i);
  }

  // Errors: a model without column names, a file without the model's columns, not a checkpoint.
  BOOST_REQUIRE(run_normlab({"train", "--quick", "--epochs", "1", "--quiet", "--out",
                             (t.path() / "moons").string()}) == 0);
  expect_error({"predict", "--checkpoint", (t.path() / "moons" / "model.safetensors").string(), "--csv", csv},
               std::vector<std::string>{"trained on moons", "goes with a model trained with --csv"});
  {
    std::ofstream f(dir / "short.csv");
    f << "sepal_length,sepal_width,petal_length\n1,2,3\n";
  }
  expect_error({"predict", "--checkpoint", (dir / "model.safetensors").string(), "--csv", (dir / "short.csv").string()},
               std::vector<std::string>{"short.csv", "lacks the feature column \"petal_width\""});
  expect_error({"predict", "--checkpoint", csv, "--csv", csv}, std::vector<std::string>{"iris_like.csv", "corrupt"});
  BOOST_TEST(!fs::exists("out/predict/predictions.csv"));
}

BOOST_AUTO_TEST_CASE(eval_reads_a_checkpoint_back) {
  // A Fashion-MNIST model evaluated from its file alone gives the test accuracy its training run
  // reported (the checkpoint's preprocessing applied to the raw images); a CSV model on its file.
  TempDir t;
  BOOST_REQUIRE(run_normlab({"train", "--train-limit", "1000", "--epochs", "1", "--hidden", "32", "--quiet", "--out",
                             (t.path() / "f").string()}) == 0);
  BOOST_REQUIRE(run_normlab({"eval", "--checkpoint", (t.path() / "f" / "model.safetensors").string(), "--quiet",
                             "--out", (t.path() / "e").string()}) == 0);
  const auto epochs = split_lines(read_file(t.path() / "f" / "epochs.csv"));
  const auto eval = split_lines(read_file(t.path() / "e" / "metrics.csv"));
  BOOST_REQUIRE(eval.size() == 2u);
  BOOST_TEST(eval[0] == "samples,loss,accuracy");
  const auto cells = [](const std::string& line) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    return c;
  };
  // epochs.csv ends with test_loss,test_acc (its first field, the data set, is quoted with commas).
  const auto head = cells(epochs[0]), last = cells(epochs.back()), got = cells(eval[1]);
  BOOST_REQUIRE(head.back() == "test_acc");
  BOOST_TEST(got[0] == "10000");
  BOOST_TEST(got[2] == last.back());  // the same count of correct test images
  BOOST_TEST(std::stod(got[1]) == std::stod(last[last.size() - 2]), boost::test_tools::tolerance(1e-6));
  const auto confusion = split_lines(read_file(t.path() / "e" / "confusion.csv"));
  BOOST_TEST(confusion.size() == 11u);
  BOOST_TEST(confusion[1].rfind("T-shirt/top,", 0) == 0u);
  int64_t total = 0;
  for (size_t r = 1; r < confusion.size(); ++r) {
    const auto c = cells(confusion[r]);
    for (size_t i = 1; i < c.size(); ++i) total += std::stoll(c[i]);
  }
  BOOST_TEST(total == 10000);
  BOOST_TEST(read_file(t.path() / "e" / "report.md").find("| Ankle boot | 1000 |") != std::string::npos);

  // A CSV model: --csv is required, and its file must have the training columns and label.
  const std::string csv = kFixtures + "iris_like.csv";
  BOOST_REQUIRE(run_normlab({"train", "--csv", csv, "--label", "species", "--hidden", "8", "--epochs", "2",
                             "--batch-size", "8", "--quiet", "--out", (t.path() / "iris").string()}) == 0);
  const std::string ckpt = (t.path() / "iris" / "model.safetensors").string();
  expect_error({"eval", "--checkpoint", ckpt, "--out", (t.path() / "x").string()},
               std::vector<std::string>{"trained on csv", "--csv FILE", "\"species\""});
  expect_error({"eval", "--checkpoint", (t.path() / "f" / "model.safetensors").string(), "--csv", csv, "--out",
                (t.path() / "x").string()},
               std::vector<std::string>{"trained on fashion-mnist", "without --csv evaluates it on the Fashion-MNIST test set"});
  BOOST_TEST(!fs::exists(t.path() / "x"));
  BOOST_REQUIRE(run_normlab({"eval", "--checkpoint", ckpt, "--csv", csv, "--quiet", "--out",
                             (t.path() / "ei").string()}) == 0);
  BOOST_TEST(split_lines(read_file(t.path() / "ei" / "per_class.csv")).size() == 4u);
  BOOST_TEST(cells(split_lines(read_file(t.path() / "ei" / "metrics.csv"))[1])[0] == "60");
}

BOOST_AUTO_TEST_CASE(plots_use_percent_axes_whole_epochs_and_a_key_below) {
  // The plot scripts (rendered by gnuplot when it is installed; the .gp files are written with the
  // images): accuracy in %, epochs on whole-number ticks, the key below the plot (a key beside it
  // took a third of the width and was clipped), and train plots train and test per epoch.
  TempDir t;
  BOOST_REQUIRE(run_normlab({"compare", "--quick", "--quiet", "--epochs", "3", "--seeds", "0", "--out",
                             (t.path() / "c").string()}) == 0);
  BOOST_REQUIRE(run_normlab({"train", "--quick", "--quiet", "--epochs", "3", "--val-fraction", "0.1", "--out",
                             (t.path() / "t").string()}) == 0);
  if (!fs::exists(t.path() / "c" / "test_accuracy.gp")) return;  // no gnuplot: no plots
  const std::string acc = read_file(t.path() / "c" / "test_accuracy.gp");
  BOOST_TEST(acc.find("set format y '%g%%'") != std::string::npos);
  BOOST_TEST(acc.find("set xtics 1") != std::string::npos);
  BOOST_TEST(acc.find("set key below") != std::string::npos);
  BOOST_TEST(acc.find("key outside") == std::string::npos);
  BOOST_TEST(acc.find("#E69F00") != std::string::npos);  // the palette's orange, not gnuplot's yellow
  const std::string epochs = read_file(t.path() / "t" / "epochs.gp");
  BOOST_TEST(epochs.find("title 'train'") != std::string::npos);
  BOOST_TEST(epochs.find("title 'validation'") != std::string::npos);
  BOOST_TEST(epochs.find("title 'test'") != std::string::npos);
  BOOST_TEST(fs::exists(t.path() / "t" / "epochs.png"));
  BOOST_TEST(read_file(t.path() / "t" / "report.md").find("![epochs](epochs.png)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(small_data_sets_train_with_the_default_batch_size) {
  // 45 training samples of a synthetic set at the default batch 128: one batch of all of them per
  // epoch (as PyTorch's DataLoader without drop_last), where the run once refused to start. Under
  // BatchNorm, a last batch of a single sample is left out, and the report says so. (The CSV
  // file below has no validation split: all 45 rows train.)
  TempDir t;
  const std::string csv = kFixtures + "iris_like.csv";
  BOOST_REQUIRE(run_normlab({"train", "--dataset", "moons", "--samples", "60", "--test-fraction", "0.25", "--epochs",
                             "2", "--quiet", "--out", (t.path() / "a").string()}) == 0);
  const auto steps = split_lines(read_file(t.path() / "a" / "steps.csv"));
  BOOST_TEST(steps.size() == 3u);  // header + 1 step per epoch
  // 45 rows at batch 4: 11 batches of 4 and a last one of 1, dropped under BatchNorm only.
  BOOST_REQUIRE(run_normlab({"train", "--csv", csv, "--label", "species", "--test-fraction", "0.25", "--epochs", "1",
                             "--batch-size", "22", "--norm", "batch", "--val-fraction", "0", "--quiet", "--out",
                             (t.path() / "b").string()}) == 0);
  BOOST_TEST(split_lines(read_file(t.path() / "b" / "steps.csv")).size() == 3u);  // 22 + 22, the 1 left out
  BOOST_TEST(read_file(t.path() / "b" / "report.md").find("last batch of one sample is left out") != std::string::npos);
  BOOST_REQUIRE(run_normlab({"train", "--csv", csv, "--label", "species", "--test-fraction", "0.25", "--epochs", "1",
                             "--batch-size", "22", "--norm", "layer", "--val-fraction", "0", "--quiet", "--out",
                             (t.path() / "c").string()}) == 0);
  BOOST_TEST(split_lines(read_file(t.path() / "c" / "steps.csv")).size() == 4u);  // 22 + 22 + 1
}

BOOST_AUTO_TEST_CASE(csv_files_in_the_layouts_of_real_data_sets_train) {
  // scikit-learn's layout (a count line, no header, the class index last) and a ';'-separated file
  // with comment lines: the same 60 rows, so the same class counts.
  TempDir t;
  const auto trained = [&](std::vector<std::string> args, const std::string& name) {
    args.insert(args.begin(), "train");
    args.insert(args.end(), {"--epochs", "1", "--batch-size", "8", "--quiet", "--out", (t.path() / name).string()});
    BOOST_REQUIRE(run_normlab(args) == 0);
    return nlohmann::json::parse(read_file(t.path() / name / "manifest.json"))["data"];
  };
  const auto sk = trained({"--csv", kFixtures + "sklearn_layout.csv", "--csv-skip-rows", "1", "--csv-no-header",
                           "--label", "4"}, "sk");
  BOOST_TEST(sk["class_names"] == nlohmann::json::parse(R"(["0","1","2"])"));
  // --class-names names numeric classes: in the checkpoint, eval's tables and predict's columns,
  // while eval and predict still read the file's labels 0, 1, 2.
  const auto named = trained({"--csv", kFixtures + "sklearn_layout.csv", "--csv-skip-rows", "1", "--csv-no-header",
                              "--label", "4", "--class-names", "setosa,versicolor,virginica"}, "named");
  BOOST_TEST(named["class_names"] == nlohmann::json::parse(R"(["setosa","versicolor","virginica"])"));
  BOOST_TEST(named["class_labels"] == nlohmann::json::parse(R"(["0","1","2"])"));
  const std::string named_model = (t.path() / "named" / "model.safetensors").string();
  BOOST_TEST(run_normlab({"predict", "--checkpoint", named_model, "--csv", kFixtures + "sklearn_layout.csv", "--quiet",
                          "--out", (t.path() / "named.csv").string()}) == 0);
  BOOST_TEST(read_file(t.path() / "named.csv").find("line,predicted,label,p_setosa,p_versicolor,p_virginica") == 0u);
  BOOST_TEST(run_normlab({"eval", "--checkpoint", named_model, "--csv", kFixtures + "sklearn_layout.csv", "--quiet",
                          "--out", (t.path() / "named-eval").string()}) == 0);
  BOOST_TEST(read_file(t.path() / "named-eval" / "report.md").find("| versicolor |") != std::string::npos);
  expect_error({"train", "--csv", kFixtures + "sklearn_layout.csv", "--csv-skip-rows", "1", "--csv-no-header", "--label",
                "4", "--class-names", "a,b", "--out", (t.path() / "z").string()},
               std::vector<std::string>{"--class-names gives 2 names", "has 3 classes (0, 1, 2)"});
  expect_error({"train", "--csv", kFixtures + "sklearn_layout.csv", "--csv-skip-rows", "1", "--csv-no-header", "--label",
                "4", "--class-names", "a,b,a", "--out", (t.path() / "z").string()},
               std::vector<std::string>{"--class-names: name 3 (\"a\") is given twice"});
  // Without those flags, the count line is not taken for a header: the error names the flags that read it.
  expect_error({"train", "--csv", kFixtures + "sklearn_layout.csv", "--label", "4", "--out", (t.path() / "y").string()},
               std::vector<std::string>{"line 1: \"60,4,setosa,versicolor,virginica\" is scikit-learn's count line",
                                        "--csv-skip-rows 1 --csv-no-header --label 4"});
  BOOST_TEST(sk["feature_names"] == nlohmann::json::parse(R"(["0","1","2","3"])"));
  const auto semi = trained({"--csv", kFixtures + "semicolons.csv", "--csv-sep", ";", "--csv-comment", "#", "--label",
                             "species"}, "semi");
  BOOST_TEST(semi["class_names"] == nlohmann::json::parse(R"(["setosa","versicolor","virginica"])"));
  BOOST_TEST(semi["preprocessing"]["mean"] == sk["preprocessing"]["mean"]);  // the same rows, the same split
  // The checkpoint records how its file was read: eval and predict read the same kind of file
  // without the flags, and a flag typed still wins.
  const std::string semi_model = (t.path() / "semi" / "model.safetensors").string();
  BOOST_TEST(run_normlab({"eval", "--checkpoint", semi_model, "--csv", kFixtures + "semicolons.csv", "--quiet", "--out",
                          (t.path() / "semi-eval").string()}) == 0);
  BOOST_TEST(run_normlab({"predict", "--checkpoint", semi_model, "--csv", kFixtures + "semicolons.csv", "--quiet",
                          "--out", (t.path() / "semi.csv").string()}) == 0);
  BOOST_TEST(read_file(t.path() / "semi.csv").find("line,predicted,label,p_setosa") == 0u);
  expect_error({"predict", "--checkpoint", semi_model, "--csv", kFixtures + "semicolons.csv", "--csv-sep", ",",
                "--quiet", "--out", (t.path() / "semi2.csv").string()},
               "not a feature column");
  // Two columns left out: the manifest's features are the other two, in file order.
  const auto two = trained({"--csv", kFixtures + "semicolons.csv", "--csv-sep", ";", "--csv-comment", "#", "--label",
                            "species", "--csv-drop", "sepal_width,petal_length"}, "two");
  BOOST_TEST(two["feature_names"] == nlohmann::json::parse(R"(["sepal_length","petal_width"])"));
  const auto one = trained({"--csv", kFixtures + "semicolons.csv", "--csv-sep", ";", "--csv-comment", "#", "--label",
                            "species", "--csv-columns", "petal_width"}, "one");
  BOOST_TEST(one["feature_names"] == nlohmann::json::parse(R"(["petal_width"])"));
  expect_error({"train", "--csv", kFixtures + "semicolons.csv", "--label", "species", "--csv-sep", "ab", "--out",
                (t.path() / "x").string()},
               std::vector<std::string>{"--csv-sep", "expected one character"});
}

BOOST_AUTO_TEST_CASE(init_from_starts_from_the_given_weights) {
  TempDir t;
  const std::string a = (t.path() / "a").string(), b = (t.path() / "b").string(), weights = a + "/model.safetensors";
  BOOST_REQUIRE(run_normlab({"train", "--quick", "--quiet", "--epochs", "1", "--out", a}) == 0);
  // lr 0: the weights do not move, so the model saved is the one it started from (another seed
  // would initialize it otherwise).
  BOOST_REQUIRE(run_normlab({"train", "--quick", "--quiet", "--epochs", "1", "--lr", "0", "--seed", "7", "--init-from",
                             weights, "--out", b}) == 0);
  const auto x = normlab::serialize::load_safetensors(weights), y = normlab::serialize::load_safetensors(b + "/model.safetensors");
  BOOST_REQUIRE(x.tensors.size() == y.tensors.size());
  for (size_t i = 0; i < x.tensors.size(); ++i) {
    const auto& [name, tx] = x.tensors[i];
    const auto& ty = y.tensors[i].second;
    BOOST_TEST(y.tensors[i].first == name);
    BOOST_TEST(std::string(static_cast<const char*>(tx.raw_data()), tx.numel() * 4) ==
                   std::string(static_cast<const char*>(ty.raw_data()), ty.numel() * 4),
               name);
  }
  const auto b_manifest = nlohmann::json::parse(read_file(t.path() / "b" / "manifest.json"));
  BOOST_TEST(b_manifest["config"]["config"]["init_from"] == weights);
  // Weights of another model: which tensors do not fit, before anything is written.
  expect_error({"train", "--quick", "--hidden", "16", "--init-from", weights, "--out", (t.path() / "c").string()},
               std::vector<std::string>{"--init-from", "wrong shape: 0.weight (expected shape [16, 2], got [32, 2])"});
  BOOST_TEST(!fs::exists(t.path() / "c"));
  expect_error({"train", "--quick", "--init-from", (t.path() / "none.safetensors").string()},
               std::vector<std::string>{"--init-from", "none.safetensors"});
}

BOOST_AUTO_TEST_CASE(eval_every_evaluates_between_epochs_without_changing_the_training) {
  TempDir t;
  const auto out = [&](const std::string& n) { return (t.path() / n).string(); };
  BOOST_REQUIRE(run_normlab({"train", "--quick", "--quiet", "--norm", "batch", "--val-fraction", "0.1", "--out",
                             out("plain")}) == 0);
  BOOST_REQUIRE(run_normlab({"train", "--quick", "--quiet", "--norm", "batch", "--val-fraction", "0.1", "--eval-every",
                             "7", "--out", out("every")}) == 0);
  // The same training, bit for bit: the evaluations only read the model.
  for (const char* f : {"steps.csv", "epochs.csv", "activations.csv", "grad_norms.csv"})
    BOOST_TEST(read_file(t.path() / "plain" / f) == read_file(t.path() / "every" / f), f);
  BOOST_TEST(!fs::exists(t.path() / "plain" / "evals.csv"));
  // 1400 training samples at batch 32: 43 steps per epoch, 129 steps, an evaluation after steps 7, 14, ..., 126.
  BOOST_TEST(lines(t.path() / "every" / "evals.csv") == 1 + 129 / 7);
  const std::string evals = read_file(t.path() / "every" / "evals.csv");
  BOOST_TEST(evals.find("step,epoch,val_loss,val_acc,test_loss,test_acc") != std::string::npos);
  BOOST_TEST(read_file(t.path() / "every" / "report.md").find("18 evaluations in evals.csv") != std::string::npos);
  // compare: steps to the target are multiples of 5 steps, no more than the epoch's.
  BOOST_REQUIRE(run_normlab({"compare", "--quick", "--quiet", "--seeds", "0", "--eval-every", "5", "--out",
                             out("cmp")}) == 0);
  BOOST_REQUIRE(run_normlab({"compare", "--quick", "--quiet", "--seeds", "0", "--out", out("cmp_epochs")}) == 0);
  const auto steps_to = [&](const std::string& dir) {
    std::vector<std::string> v;
    std::istringstream in(read_file(t.path() / dir / "runs.csv"));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {  // ..., epochs_to_target, steps_to_target, target_acc
      const auto last = line.rfind(','), before = line.rfind(',', last - 1);
      v.push_back(line.substr(before + 1, last - before - 1));
    }
    return v;
  };
  const auto fine = steps_to("cmp"), coarse = steps_to("cmp_epochs");
  BOOST_REQUIRE(fine.size() == 3);
  for (size_t i = 0; i < fine.size(); ++i) {
    BOOST_REQUIRE(!fine[i].empty());
    BOOST_TEST(std::stoi(fine[i]) % 5 == 0);
    BOOST_TEST(std::stoi(fine[i]) <= std::stoi(coarse[i]));
  }
  expect_error({"sweep", "--quick", "--eval-every", "5"}, "--eval-every");
}

BOOST_AUTO_TEST_CASE(optimizer_flag_takes_pytorchs_defaults_and_refuses_the_others_flags) {
  TempDir t;
  const auto config = [&](std::vector<std::string> args, const std::string& name) {
    args.insert(args.begin(), "train");
    args.insert(args.end(), {"--quick", "--quiet", "--epochs", "1", "--out", (t.path() / name).string()});
    BOOST_REQUIRE(run_normlab(args) == 0);
    return nlohmann::json::parse(read_file(t.path() / name / "manifest.json"))["config"]["config"];
  };
  const auto adamw = config({"--optimizer", "adamw"}, "adamw");
  BOOST_TEST(adamw["lr"] == 1e-3);
  BOOST_TEST(adamw["weight_decay"] == 1e-2);
  BOOST_TEST(adamw["optimizer"]["name"] == "adamw");
  BOOST_TEST(read_file(t.path() / "adamw" / "report.md")
                 .find("AdamW lr 0.001, betas (0.9, 0.999), eps 1e-08, weight decay 0.01 (decoupled)") !=
             std::string::npos);
  const auto adam = config({"--optimizer", "adam", "--lr", "0.01", "--betas", "0.8,0.99"}, "adam");
  BOOST_TEST(adam["lr"] == 0.01);
  BOOST_TEST(adam["weight_decay"] == 0.0);
  BOOST_TEST(adam["optimizer"]["betas"] == nlohmann::json::parse("[0.8, 0.99]"));
  const auto sgd = config({}, "sgd");
  BOOST_TEST(!sgd.contains("optimizer"));  // SGD runs keep the records they always had
  expect_error({"train", "--quick", "--optimizer", "adam", "--momentum", "0.5"},
               std::vector<std::string>{"--momentum goes with --optimizer sgd", "--optimizer adam"});
  expect_error({"compare", "--quick", "--eps", "1e-6"},
               std::vector<std::string>{"--eps goes with --optimizer adam or adamw", "(the default)"});
  expect_error({"train", "--quick", "--optimizer", "adam", "--betas", "0.9,1"}, "--betas");
  expect_error({"train", "--quick", "--optimizer", "rmsprop"}, "--optimizer");
}

BOOST_AUTO_TEST_CASE(regression_trains_compares_evaluates_and_predicts) {
  TempDir t;
  const std::string csv = kFixtures + "regression.csv", ck = (t.path() / "train" / "model.safetensors").string();
  const std::vector<std::string> data{"--csv", csv, "--csv-comment", "#", "--label", "price"};
  // SGD on all the training rows, not the CSV defaults (Adam, a validation split, early stopping).
  std::vector<std::string> train{"train", "--task", "regression", "--norm", "layer", "--epochs", "30", "--batch-size", "8",
                                 "--optimizer", "sgd", "--val-fraction", "0", "--quiet", "--out",
                                 (t.path() / "train").string()};
  train.insert(train.end(), data.begin(), data.end());
  BOOST_REQUIRE(run_normlab(train) == 0);
  // R^2 in place of accuracy, in the CSV header, the report and the manifest.
  const std::string epochs = read_file(t.path() / "train" / "epochs.csv");
  BOOST_TEST(epochs.find(",train_loss,train_r2,test_loss,test_r2\n") != std::string::npos);
  const std::string report = read_file(t.path() / "train" / "report.md");
  BOOST_TEST(report.find("| test R² | test RMSE |") != std::string::npos);
  BOOST_TEST(report.find("regression target price") != std::string::npos);
  const auto train_manifest = nlohmann::json::parse(read_file(t.path() / "train" / "manifest.json"));
  BOOST_TEST(train_manifest["config"]["config"]["task"] == "regression");
  // The target y = 20 + 3 rooms - 2 distance + noise of std 0.5 is learned: test R^2 above 0.9.
  const std::string last = epochs.substr(epochs.rfind('\n', epochs.size() - 2) + 1);
  BOOST_TEST(std::stod(last.substr(last.rfind(',') + 1)) > 0.9, last);
  // The checkpoint says how to undo the target's standardization; eval and predict use it.
  const auto md = normlab::serialize::load_safetensors(ck).metadata;
  BOOST_TEST(md.at("task") == "regression");
  BOOST_TEST(nlohmann::json::parse(md.at("target"))["name"] == "price");
  std::vector<std::string> eval{"eval", "--checkpoint", ck, "--csv", csv, "--csv-comment", "#", "--quiet", "--out",
                                (t.path() / "eval").string()};
  BOOST_REQUIRE(run_normlab(eval) == 0);
  const std::string metrics = read_file(t.path() / "eval" / "metrics.csv");
  BOOST_TEST(metrics.find("samples,loss,rmse,r2\n80,") == 0, metrics);
  const double rmse = std::stod(metrics.substr(metrics.find('\n') + 1).substr(metrics.substr(metrics.find('\n') + 1).find(',', 3) + 1));
  BOOST_TEST(rmse < 1.5, metrics);  // the noise's std is 0.5, the target's about 5
  const std::string preds = (t.path() / "preds.csv").string();
  BOOST_REQUIRE(run_normlab({"predict", "--checkpoint", ck, "--csv", csv, "--csv-comment", "#", "--quiet", "--out",
                             preds}) == 0);
  BOOST_TEST(read_file(preds).find("line,predicted,price\n3,") == 0);
  BOOST_TEST(lines(preds) == 81);
  // compare: the norms on the regression task.
  std::vector<std::string> cmp{"compare", "--task", "regression", "--epochs", "3", "--seeds", "0", "--target", "0.5",
                               "--quiet", "--out", (t.path() / "cmp").string()};
  cmp.insert(cmp.end(), data.begin(), data.end());
  BOOST_REQUIRE(run_normlab(cmp) == 0);
  BOOST_TEST(read_file(t.path() / "cmp" / "report.md").find("| norm | final test R² | final test loss |") !=
             std::string::npos);
  BOOST_TEST(read_file(t.path() / "cmp" / "summary.csv").find("test_r2_mean") != std::string::npos);
  // Not with the sweep and the study; and a numeric label read as classes says how to regress.
  std::vector<std::string> sweep{"sweep", "--task", "regression"};
  sweep.insert(sweep.end(), data.begin(), data.end());
  expect_error(sweep, std::vector<std::string>{"--task regression goes with train and compare"});
  std::vector<std::string> classes{"train", "--quiet", "--out", (t.path() / "classes").string()};
  classes.insert(classes.end(), data.begin(), data.end());
  expect_error(classes, std::vector<std::string>{"The label column \"price\" holds", "--task regression"});
  expect_error({"train", "--quick", "--task", "regression"}, "--task goes with --dataset csv");
}

BOOST_AUTO_TEST_SUITE_END()
