// Gradient clipping in training runs (TrainConfig::clip_grad_norm, --clip-grad-norm): one plain SGD
// step of lr 1 moves the parameters by exactly the clipped gradient, a bound above the gradient's
// norm changes nothing, and the commands take the flag (the lstm's default: Adam, clipped to 1).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "experiments/registry/datasets.h"
#include "experiments/run/trainer.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab::experiments;
using normlab::test::read_file;
using normlab::test::run_normlab_quiet;
using normlab::test::TempDir;

namespace {

// One step of plain SGD (lr 1, no momentum, constant schedule) on 32 moons in one batch.
TrainConfig one_step(double clip) {
  TrainConfig c;
  c.model.hidden = {8};
  c.epochs = 1;
  c.batch_size = 32;
  c.lr = 1, c.momentum = 0, c.schedule = "none";
  c.clip_grad_norm = clip;
  return c;
}

Splits moons() {
  DataSpec d;
  d.name = "moons";
  d.samples = 40;
  d.test_fraction = 0.2;
  return load_data(d);
}

// The L2 norm of the change of every parameter from the seeded start to the run's end.
double distance_moved(const RunResult& r, const Splits& s) {
  TrainConfig c = r.config;
  normlab::autograd::Generator gen(c.seed);
  const Model start = build_model(c.model, gen);
  const auto before = start.net->parameters(), after = r.model->parameters();
  double sum = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const float* a = before[i].data<float>();
    const float* b = after[i].data<float>();
    for (int64_t j = 0; j < before[i].numel(); ++j) sum += (double(b[j]) - a[j]) * (double(b[j]) - a[j]);
  }
  return std::sqrt(sum);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(clip_grad_norm)

BOOST_AUTO_TEST_CASE(one_sgd_step_moves_by_the_clipped_gradient) {
  const Splits s = moons();
  const RunResult free = train_run(one_step(0), s);
  BOOST_REQUIRE_EQUAL(free.total_steps, 1);
  const double unclipped = distance_moved(free, s);  // lr 1: the gradient's norm
  BOOST_REQUIRE(unclipped > 0.01);
  const RunResult clipped = train_run(one_step(unclipped / 4), s);
  BOOST_TEST(distance_moved(clipped, s) == unclipped / 4, boost::test_tools::tolerance(1e-4));
  // A bound above the norm scales by 1: the same bits as no clipping.
  const RunResult loose = train_run(one_step(unclipped * 4), s);
  const auto a = free.model->parameters(), b = loose.model->parameters();
  for (size_t i = 0; i < a.size(); ++i)
    for (int64_t j = 0; j < a[i].numel(); ++j) BOOST_TEST(a[i].data<float>()[j] == b[i].data<float>()[j]);
}

// compare and sweep take --clip-grad-norm for every arch; --arch lstm defaults to Adam clipped to 1
// and says so; an mlp keeps SGD unclipped.
BOOST_AUTO_TEST_CASE(commands_take_the_flag_and_the_lstm_defaults) {
  const std::vector<std::string> tiny = {"--train-limit", "64", "--test-limit", "64", "--epochs", "1",
                                         "--seeds", "0", "--norms", "none", "--hidden", "8"};
  auto report_of = [&](std::vector<std::string> args) {
    TempDir t;
    args.insert(args.end(), tiny.begin(), tiny.end());
    args.insert(args.end(), {"--out", t.path().string()});
    BOOST_REQUIRE_EQUAL(run_normlab_quiet(args), 0);
    return read_file(t.path() / "report.md");
  };
  const auto has = [](const std::string& s, const std::string& n) { return s.find(n) != std::string::npos; };
  const std::string lstm = report_of({"compare", "--arch", "lstm"});
  BOOST_TEST(has(lstm, "Adam lr 0.001, betas (0.9, 0.999), eps 1e-08, gradient norm clipped to 1, batch"), lstm);
  BOOST_TEST(has(lstm, "--arch lstm's defaults, not given on the command line: --optimizer adam (lr 0.001) and "
                       "--clip-grad-norm 1."), lstm);
  const std::string given = report_of({"compare", "--arch", "lstm", "--optimizer", "sgd", "--clip-grad-norm", "0"});
  BOOST_TEST(!has(given, "clipped"), given);
  BOOST_TEST(!has(given, "defaults, not given"), given);
  const std::string mlp = report_of({"compare"});
  BOOST_TEST(has(mlp, "SGD lr 0.05, momentum 0.9, batch"), mlp);
  const std::string mlp_sweep = report_of({"sweep", "--clip-grad-norm", "0.5", "--batch-sizes", "16"});
  BOOST_TEST(has(mlp_sweep, "SGD momentum 0.9, gradient norm clipped to 0.5, lr ="), mlp_sweep);
}

BOOST_AUTO_TEST_SUITE_END()
