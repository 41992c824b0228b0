// The LSTM in the studies: `normlab compare` and `normlab sweep --over batch` with --arch lstm on a
// few Fashion-MNIST images (tables, gradient panels named by the LSTM's weights, the gradient
// reaching each time step's input, the report), and its batch-shared norm.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "base/error.h"
#include "experiments/models/model.h"
#include "experiments/registry/datasets.h"
#include "experiments/run/trainer.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using normlab::test::read_file;
using normlab::test::run_normlab_quiet;
using normlab::test::TempDir;
using normlab::experiments::ModelSpec;
using normlab::experiments::build_model;

namespace {

// A tiny LSTM run: 64 training and 64 test images, 8 units, one epoch.
std::vector<std::string> tiny(std::vector<std::string> args, const fs::path& out) {
  for (const char* a : {"--arch", "lstm", "--hidden", "8", "--train-limit", "64", "--test-limit", "64", "--epochs", "1"})
    args.push_back(a);
  args.insert(args.end(), {"--out", out.string()});
  return args;
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(lstm_study)

// compare trains every norm of the LSTM and writes its tables and report (the gradient panels and
// sentences name the LSTM's weight matrices; no activation is named, the cell has its own).
BOOST_AUTO_TEST_CASE(compare_writes_tables_and_a_report) {
  TempDir t;
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(tiny({"compare", "--norms", "none,layer,batch", "--seeds", "0,1",
                                              "--batch-size", "16"}, t.path())),
                      0);
  for (const char* f : {"runs.csv", "steps.csv", "epochs.csv", "grad_norms.csv", "summary.csv", "report.md"})
    BOOST_TEST(fs::exists(t.path() / f), f << " is missing");
  const std::string report = read_file(t.path() / "report.md");
  BOOST_TEST(has(report, "Model 1x28x28-lstm8-10, data"), report);
  BOOST_TEST(has(report, "(LSTM layer 1 input-to-hidden / output Linear weight)"), report);
  BOOST_TEST(has(report, "| LayerNorm |"), report);
  BOOST_TEST(has(report, "Gradient reaching the inputs: g_t = sqrt(B) ||dL/dX_t||"), report);
  BOOST_TEST(has(report, "The most gradient reaches the first step with "), report);
  // input_grad_norms.csv: every recorded step has the 28 time steps, the first and the last.
  const std::string grads = read_file(t.path() / "input_grad_norms.csv");
  BOOST_TEST(has(grads, ",step,time_step,input_grad_norm\n"), grads.substr(0, 300));
  BOOST_TEST(has(grads, ",0,1,"));
  BOOST_TEST(has(grads, ",0,28,"));
  BOOST_TEST(!has(grads, ",0,29,"));
  // --resume keeps the finished runs' records, input gradients included; one thread gives the same bits.
  const std::vector<std::string> again = tiny({"compare", "--norms", "none,layer,batch", "--seeds", "0,1",
                                               "--batch-size", "16", "--resume"}, t.path());
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(again), 0);
  BOOST_TEST((read_file(t.path() / "input_grad_norms.csv") == grads));
  TempDir one;
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(tiny({"compare", "--norms", "none,layer,batch", "--seeds", "0,1",
                                              "--batch-size", "16", "--threads", "1"}, one.path())),
                      0);
  BOOST_TEST((read_file(one.path() / "input_grad_norms.csv") == grads), "1 thread and the default differ");
  if (fs::exists(t.path() / "grad_norms.gp")) {  // gnuplot installed: the panels are titled by the weights
    const std::string gp = read_file(t.path() / "grad_norms.gp");
    BOOST_TEST(has(gp, "LSTM layer 1 hidden-to-hidden weight"), gp);
  }
}

// sweep --over batch trains every norm at every batch size with the lstm's square-root lr rule, and
// evaluates both recurrent BatchNorms with running, precise and test-batch statistics, with the
// reading's comparisons at the smallest and largest batch.
BOOST_AUTO_TEST_CASE(sweep_over_batch_writes_tables_and_a_report) {
  TempDir t;
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(tiny({"sweep", "--norms", "none,batch,batch-shared", "--seeds", "0,1",
                                              "--batch-sizes", "4,16"}, t.path())),
                      0);
  for (const char* f : {"runs.csv", "epochs.csv", "summary.csv", "report.md"})
    BOOST_TEST(fs::exists(t.path() / f), f << " is missing");
  const std::string report = read_file(t.path() / "report.md");
  for (const char* s : {"| batch | no norm | BatchNorm | BatchNorm (shared statistics) | BatchNorm, precise BN | "
                        "BatchNorm, test-batch stats | BatchNorm (shared statistics), precise BN | "
                        "BatchNorm (shared statistics), test-batch stats |",
                        "| 4 |", "| 16 |", "lr = 0.001 x sqrt(batch / 128)", "--lr-scaling sqrt.",
                        "BatchNorm (shared statistics) trains exactly as BatchNorm",
                        "At batch 4 the highest mean is", "At batch 16 the highest mean is",
                        "BatchNorm, accuracy with the test batches' statistics minus with running statistics",
                        "BatchNorm (shared statistics), accuracy with precise statistics minus with running"})
    BOOST_TEST(has(report, s), "report.md lacks " << s << ":\n" << report);
  // Precise BN recomputes the cell's statistics: both seeds have a precise accuracy (precise_acc_n,
  // the 11th column of summary.csv, is 2).
  const std::string summary = read_file(t.path() / "summary.csv");
  const size_t row = summary.find("\nbatch-shared,4,");
  BOOST_REQUIRE(row != std::string::npos);
  std::vector<std::string> cells;
  std::stringstream line(summary.substr(row + 1, summary.find('\n', row + 1) - row - 1));
  for (std::string c; std::getline(line, c, ',');) cells.push_back(c);
  BOOST_REQUIRE(cells.size() > 10u);
  BOOST_TEST(cells[10] == "2");
  // lr 0.001 x sqrt(4 / 128) at batch 4.
  BOOST_TEST(has(read_file(t.path() / "runs.csv"), ",4,0.000176776695,"));
}

// The lr rule is a flag: none keeps --lr at every batch; an mlp keeps the linear rule; --over lr
// refuses it.
BOOST_AUTO_TEST_CASE(lr_scaling_is_stated_and_refused_where_it_cannot_apply) {
  TempDir t, u, v;
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(tiny({"sweep", "--norms", "layer", "--seeds", "0", "--batch-sizes", "4",
                                              "--lr-scaling", "none"}, t.path())),
                      0);
  BOOST_TEST(has(read_file(t.path() / "report.md"), "lr = 0.001 at every batch size (not scaled)"));
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"sweep", "--norms", "layer", "--seeds", "0", "--batch-sizes", "4",
                                         "--train-limit", "64", "--test-limit", "64", "--epochs", "1", "--hidden", "8",
                                         "--out", u.path().string()}),
                      0);
  BOOST_TEST(has(read_file(u.path() / "report.md"), "lr = 0.05 x batch / 128,"));
  std::string message = "no error";
  try {
    run_normlab_quiet(tiny({"sweep", "--over", "lr", "--lr-scaling", "sqrt"}, v.path()));
  } catch (const std::exception& e) {
    message = e.what();
  }
  BOOST_TEST(has(message, "--lr-scaling cannot be used with --over lr"), message);
}

// batch-shared, the recurrent BatchNorm with one set of statistics for all steps, is the lstm's
// cell with shared statistics; another arch refuses it, naming the arch it goes with.
BOOST_AUTO_TEST_CASE(batch_shared_is_the_lstms_only) {
  normlab::autograd::Generator gen(0);
  ModelSpec s;
  s.arch = "lstm", s.inputs = 16, s.image = {1, 4, 4}, s.outputs = 3, s.hidden = {8}, s.norm = "batch-shared";
  const std::string net = build_model(s, gen).net->str();
  BOOST_TEST(has(net, "BatchNormLSTM(4, 8, batch_first=True, max_steps=4, shared_statistics=True)"), net);
  s.norm = "batch";
  BOOST_TEST(!has(build_model(s, gen).net->str(), "shared_statistics"));
  for (const char* arch : {"mlp", "cnn"}) {
    TempDir t;
    std::string message = "no error";
    try {
      run_normlab_quiet({"compare", "--arch", arch, "--norms", "none,batch-shared", "--train-limit", "64",
                         "--test-limit", "64", "--epochs", "1", "--seeds", "0", "--out", t.path().string()});
    } catch (const normlab::Error& e) {
      message = e.what();
    }
    BOOST_TEST(has(message, std::string("norm batch-shared (BatchNorm (shared statistics)) is a norm of --arch lstm "
                                        "only, not of --arch ") + arch),
               message);
    BOOST_TEST(!fs::exists(t.path() / "report.md"));
  }
}

// The recorded gradient reaching step t's input is sqrt(B) ||dL/dX_t|| of the training batch: one
// step over the whole set (its order does not change the mean loss or the norm), against the same
// gradient computed directly from the seeded model, for an LSTM with and without batch statistics.
BOOST_AUTO_TEST_CASE(input_gradient_is_the_batch_gradient_at_each_step) {
  using namespace normlab;
  experiments::DataSpec d;
  d.train_limit = 32, d.test_limit = 8;
  const experiments::Splits s = experiments::load_data(d);
  for (const char* norm : {"none", "batch"}) {
    BOOST_TEST_CONTEXT(norm) {
      experiments::TrainConfig c;
      c.model.arch = "lstm", c.model.hidden = {8}, c.model.image = {1, 28, 28}, c.model.norm = norm;
      c.epochs = 1, c.batch_size = 32, c.stats_every = 1, c.optimizer = "adam", c.lr = 1e-3;
      const experiments::RunResult r = experiments::train_run(c, s);
      BOOST_REQUIRE_EQUAL(r.input_grads.size(), 28u);
      autograd::Generator gen(c.seed);
      c.model.inputs = 784, c.model.outputs = 10;
      const experiments::Model m = experiments::build_model(c.model, gen);
      m.net->train();
      autograd::Tensor x = s.train.x.detach();
      x.requires_grad_();
      autograd::cross_entropy((*m.net)(x), s.train.labels).backward();
      const autograd::Tensor g = x.grad();
      for (int64_t t : {0, 13, 27}) {
        double sum = 0;
        for (int64_t i = 0; i < 32; ++i)
          for (int64_t j = 0; j < 28; ++j) sum += std::pow(double(g.data<float>()[i * 784 + t * 28 + j]), 2);
        BOOST_TEST(r.input_grads[size_t(t)].time_step == t + 1);
        BOOST_TEST(r.input_grads[size_t(t)].norm == std::sqrt(32 * sum), boost::test_tools::tolerance(1e-4));
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
