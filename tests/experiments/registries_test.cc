// The optimizer, schedule, data-set and arch registries: a toy entry of each kind, added with one
// register_* call as a program of a user's own would, is accepted by the command line, trained by
// `normlab train` and named in its outputs; its own flags are checked like the built-in ones; the
// command table lists every subcommand once.
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "base/error.h"
#include "data/dataset.h"
#include "data/split.h"
#include "experiments/commands/cli.h"
#include "experiments/commands/command.h"
#include "experiments/models/archs.h"
#include "experiments/models/model.h"
#include "experiments/registry/datasets.h"
#include "experiments/registry/optimizers.h"
#include "experiments/run/trainer.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using namespace normlab;
using namespace normlab::experiments;
using normlab::test::read_file;
using normlab::test::run_normlab;
using normlab::test::TempDir;
using normlab::experiments::commands::CommandEntry;
using normlab::experiments::commands::command_table;

namespace {

// signSGD: p -= lr sign(g), the simplest optimizer that is not SGD.
class SignSGD : public optim::Optimizer {
 public:
  SignSGD(std::vector<autograd::Tensor> params, double lr) : Optimizer("SignSGD", std::move(params), lr) {}
  void step() override {
    check_grads();
    for (const autograd::Tensor& p : parameters()) {
      const autograd::Tensor g = p.grad();
      if (!g.defined()) continue;
      float* w = p.data<float>();
      const float* d = g.data<float>();
      for (int64_t i = 0; i < p.numel(); ++i) w[i] -= static_cast<float>(lr()) * ((d[i] > 0) - (d[i] < 0));
    }
  }
};

// A 1-D set of two classes: x uniform in [-1, 1] (evenly spaced), class x > 0.
data::Dataset make_line(int64_t n) {
  data::Dataset d;
  d.name = "line";
  d.x = autograd::empty({n, 1});
  for (int64_t i = 0; i < n; ++i) {
    const float x = -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(n - 1);
    d.x.data<float>()[i] = x;
    d.labels.push_back(x > 0 ? 1 : 0);
  }
  d.num_classes = 2;
  d.class_names = {"neg", "pos"};
  return d;
}

void register_toys_once() {
  static const bool done = [] {
    register_optimizer({.name = "signsgd",
                        .display = "SignSGD",
                        .default_lr = 0.01,
                        .make = [](const TrainConfig& c, std::vector<autograd::Tensor> params) -> std::unique_ptr<optim::Optimizer> {
                          return std::make_unique<SignSGD>(std::move(params), c.lr);
                        }});
    register_schedule({.name = "linear",
                       .help = "linear decay to 0 at the last step",
                       .make = [](const TrainConfig&, int64_t steps) -> optim::Schedule {
                         return optim::Schedule("linear", [steps](int64_t t, double base_lr) {
                           return base_lr * (1.0 - static_cast<double>(t) / static_cast<double>(steps));
                         });
                       }});
    register_dataset({.name = "line",
                      .flags = {"--samples"},
                      .input_rule = "the point's coordinate",
                      .load = [](const DataSpec& spec) {
                        return data::split_fractions(make_line(spec.samples), 0, 0.25, spec.seed, true);
                      }});
    // A linear classifier: the classifier Linear alone (an empty layer string).
    register_arch({.name = "logistic",
                   .help = "logistic (no hidden layer)",
                   .layers = [](const ModelSpec&) { return std::string(); },
                   .describe = [](const ModelSpec& s) { return std::to_string(s.inputs) + "-" + std::to_string(s.outputs); }});
    return true;
  }();
  (void)done;
}

// The message of the usage error that args give (empty if none).
std::string usage_error(std::vector<std::string> args) {
  args.insert(args.begin(), "normlab");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    check_command_line(static_cast<int>(argv.size()), argv.data());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(registries)

BOOST_AUTO_TEST_CASE(a_registered_optimizer_and_schedule_train_and_are_recorded) {
  register_toys_once();
  TempDir out;
  BOOST_REQUIRE_EQUAL(run_normlab({"train", "--quick", "--quiet", "--optimizer", "signsgd", "--schedule", "linear",
                           "--epochs", "2", "--out", out.path().string()}),
                      0);
  const std::string report = read_file(out.path() / "report.md");
  BOOST_TEST(report.find("SignSGD lr 0.01") != std::string::npos, report);  // its default lr
  // The schedule's name is a column of every tidy CSV; lr falls linearly after the 10 warmup steps.
  const std::string steps = read_file(out.path() / "steps.csv");
  BOOST_TEST(steps.find(",linear,") != std::string::npos);
  const std::string epochs = read_file(out.path() / "epochs.csv");
  BOOST_TEST(epochs.find("nan") == std::string::npos, epochs);
  // Flags of other optimizers and schedules are refused, naming those that read them.
  BOOST_TEST(usage_error({"train", "--quick", "--optimizer", "signsgd", "--momentum", "0.5"})
                 .find("--momentum goes with --optimizer sgd, not --optimizer signsgd") != std::string::npos);
  BOOST_TEST(usage_error({"train", "--quick", "--schedule", "linear", "--step-every", "5"})
                 .find("--step-every goes with --schedule step") != std::string::npos);
  BOOST_TEST(usage_error({"train", "--quick", "--optimizer", "sgdx"}).find("--optimizer") != std::string::npos);
  BOOST_CHECK_THROW(register_optimizer({.name = "signsgd", .make = optimizer("sgd").make}), Error);
}

BOOST_AUTO_TEST_CASE(a_registered_dataset_and_arch_train_and_evaluate) {
  register_toys_once();
  TempDir out;
  BOOST_REQUIRE_EQUAL(run_normlab({"train", "--quiet", "--dataset", "line", "--samples", "200", "--arch", "logistic",
                           "--epochs", "30", "--batch-size", "16", "--lr", "0.5", "--out", out.path().string()}),
                      0);
  const std::string report = read_file(out.path() / "report.md");
  BOOST_TEST(report.find("line (150 train / 0 validation / 50 test, 1 features, 2 classes)") != std::string::npos, report);
  // The classifier alone: one Linear(1, 2), which separates the two halves of the line.
  const std::string epochs = read_file(out.path() / "epochs.csv");
  const std::string last = epochs.substr(epochs.rfind('\n', epochs.size() - 2) + 1);
  const double test_acc = std::stod(last.substr(last.rfind(',') + 1));
  BOOST_TEST(test_acc >= 0.95, last);
  // Its flags: --samples is read by line, --noise by the synthetic sets only.
  BOOST_TEST(usage_error({"train", "--dataset", "line", "--noise", "0.1"}).find("--noise sets a synthetic data set") !=
             std::string::npos);
  BOOST_TEST(usage_error({"train", "--dataset", "line", "--arch", "logistic", "--hidden", "8"})
                 .find("--hidden goes with --arch mlp or lstm, not --arch logistic") != std::string::npos);
  // The checkpoint rebuilds the arch from its metadata.
  BOOST_TEST(model_spec_from_metadata({{"arch", "logistic"}, {"inputs", "1"}, {"outputs", "2"}, {"norm", "none"},
                                       {"activation", "relu"}},
                                      "m.safetensors")
                 .arch == "logistic");
}

BOOST_AUTO_TEST_CASE(eval_rebuilds_a_synthetic_sets_test_split_from_the_checkpoint) {
  TempDir out;
  const fs::path train = out.path() / "train", eval = out.path() / "eval";
  BOOST_REQUIRE_EQUAL(run_normlab({"train", "--quick", "--quiet", "--dataset", "spirals", "--test-fraction", "0.3",
                           "--out", train.string()}),
                      0);
  BOOST_REQUIRE_EQUAL(run_normlab({"eval", "--quiet", "--checkpoint", (train / "model.safetensors").string(), "--out",
                           eval.string()}),
                      0);
  // The same test split as the training run's last evaluation: the same accuracy.
  const std::string epochs = read_file(train / "epochs.csv");
  const std::string last = epochs.substr(epochs.rfind('\n', epochs.size() - 2) + 1);
  const std::string test_acc = last.substr(last.rfind(',') + 1, last.size() - last.rfind(',') - 2);
  BOOST_TEST(read_file(eval / "metrics.csv") .find("600,") != std::string::npos, read_file(eval / "metrics.csv"));
  BOOST_TEST(read_file(eval / "metrics.csv").find("," + test_acc + "\n") != std::string::npos,
             read_file(eval / "metrics.csv") + " vs " + test_acc);
}

BOOST_AUTO_TEST_CASE(the_command_table_lists_each_subcommand_once) {
  std::vector<std::string> names;
  for (const CommandEntry& e : command_table()) {
    BOOST_TEST(std::count(names.begin(), names.end(), e.name) == 0, e.name);
    BOOST_TEST(!e.help.empty());
    BOOST_TEST(e.make() != nullptr);
    names.push_back(e.name);
  }
  BOOST_TEST((names == std::vector<std::string>{"help", "demo", "train", "compare", "sweep", "study", "predict", "eval", "generate",
                                                    "completion"}));
}

BOOST_AUTO_TEST_SUITE_END()
