// The landscape probes in a training run: a run with them ends with the same weights and buffers,
// bit for bit, and the same losses as the run without (every norm, SGD with and without momentum,
// an MLP and a CNN); they record what they promise (every layer's ICS every probe_every steps, five
// points along -g at lr x {0.25, ..., 4}, the curvature at the four points), the records survive the
// JSON journal, and bad settings are refused.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "experiments/records/records.h"
#include "experiments/registry/datasets.h"
#include "experiments/run/trainer.h"

using namespace normlab;
using namespace normlab::experiments;

namespace {

Splits moons() {
  DataSpec d;
  d.name = "moons";
  d.samples = 200;
  return load_data(d);
}

TrainConfig config(const std::string& norm) {
  TrainConfig c;
  c.model.hidden = {8, 6};
  c.model.norm = norm;
  c.epochs = 2;
  c.batch_size = 32;
  c.lr = 0.1;
  c.momentum = 0;
  c.schedule = "none";
  return c;
}

std::vector<std::vector<double>> state_values(const RunResult& r) {
  std::vector<std::vector<double>> v;
  for (const auto& [name, t] : r.model->state_dict()) v.push_back(t.to_vector());
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(landscape_probes)

BOOST_AUTO_TEST_CASE(a_probed_run_trains_exactly_as_the_run_without_probes) {
  const Splits s = moons();
  for (const std::string norm : {"none", "batch", "noisybatch", "layer"})
    for (double momentum : {0.0, 0.9}) {
      TrainConfig c = config(norm);
      c.momentum = momentum;
      const RunResult plain = train_run(c, s);
      c.probe_every = 2, c.curvature_samples = 50, c.curvature_iters = 5, c.trace_samples = 3;
      const RunResult probed = train_run(c, s);
      BOOST_TEST_CONTEXT(norm << ", momentum " << momentum) {
        BOOST_TEST(state_values(probed) == state_values(plain));
        BOOST_REQUIRE_EQUAL(probed.steps.size(), plain.steps.size());
        for (size_t i = 0; i < plain.steps.size(); ++i) BOOST_TEST(probed.steps[i].loss == plain.steps[i].loss);
        BOOST_TEST(probed.epochs.back().test_acc == plain.epochs.back().test_acc);
        BOOST_TEST(plain.shifts.empty());
        // 12 steps (150 training samples... the split's training part, batches of 32): probes at
        // the even steps, three layers each, five points each.
        const int64_t probes = (probed.total_steps + 1) / 2;
        BOOST_TEST(probed.shifts.size() == static_cast<size_t>(3 * probes));
        BOOST_TEST(probed.landscape.size() == static_cast<size_t>(5 * probes));
        BOOST_TEST_REQUIRE(probed.curvature.size() == 4u);
        BOOST_TEST(probed.curvature[0].point == "init");
        BOOST_TEST(probed.curvature[0].step == 0);
        BOOST_TEST(probed.curvature[1].point == "quarter");
        BOOST_TEST(probed.curvature[1].step == probed.total_steps / 4);
        BOOST_TEST(probed.curvature[2].point == "half");
        BOOST_TEST(probed.curvature[3].point == "end");
        BOOST_TEST(probed.curvature[3].step == probed.total_steps);
        for (const ShiftRecord& x : probed.shifts) {
          if (x.layer == 0) BOOST_TEST(x.ics == 0.0);
          BOOST_TEST(std::isfinite(x.ics));
          BOOST_TEST(x.step % 2 == 0);
        }
        for (size_t i = 0; i < 5; ++i) {
          const LandscapeRecord& l = probed.landscape[i];
          BOOST_TEST(l.multiplier == std::vector<double>({0.25, 0.5, 1, 2, 4})[i]);
          BOOST_TEST(l.eta == l.multiplier * 0.1);
          BOOST_TEST(l.beta_smoothness > 0);
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(a_probed_cnn_trains_exactly_as_without) {
  DataSpec d;
  d.name = "moons";
  d.samples = 120;
  const Splits s = load_data(d);
  TrainConfig c = config("batch");
  c.model.arch = "cnn";
  c.model.image = {1, 1, 2};
  c.model.layers = "conv3k1-norm-act-flatten";
  c.epochs = 1;
  const RunResult plain = train_run(c, s);
  c.probe_every = 1;
  const RunResult probed = train_run(c, s);
  BOOST_TEST(state_values(probed) == state_values(plain));
  BOOST_TEST(probed.shifts.size() == static_cast<size_t>(2 * probed.total_steps));  // the conv layer, the output Linear
}

BOOST_AUTO_TEST_CASE(the_records_survive_the_journal) {
  const Splits s = moons();
  TrainConfig c = config("batch");
  c.probe_every = 3, c.curvature_samples = 40, c.curvature_iters = 4, c.trace_samples = 2;
  const RunResult r = train_run(c, s);
  const std::optional<RunResult> back = stored_run(records_json(r), r.config);
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST_REQUIRE(back->shifts.size() == r.shifts.size());
  for (size_t i = 0; i < r.shifts.size(); ++i) {
    BOOST_TEST(back->shifts[i].ics == r.shifts[i].ics);
    BOOST_TEST(back->shifts[i].name == r.shifts[i].name);
  }
  BOOST_TEST_REQUIRE(back->landscape.size() == r.landscape.size());
  for (size_t i = 0; i < r.landscape.size(); ++i) BOOST_TEST(back->landscape[i].loss == r.landscape[i].loss);
  BOOST_TEST_REQUIRE(back->curvature.size() == r.curvature.size());
  for (size_t i = 0; i < r.curvature.size(); ++i) {
    BOOST_TEST(back->curvature[i].eigenvalue == r.curvature[i].eigenvalue);
    BOOST_TEST(back->curvature[i].point == r.curvature[i].point);
  }
}

BOOST_AUTO_TEST_CASE(bad_probe_settings_are_refused) {
  const Splits s = moons();
  const auto refused = [&](TrainConfig c, const std::string& words) {
    try {
      train_run(c, s);
      BOOST_ERROR("no error; expected '" << words << "'");
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
  };
  TrainConfig c = config("none");
  c.probe_every = -1;
  refused(c, "--probe-every must be 0 (off) or a number of steps");
  c = config("none");
  c.curvature_samples = 100000;
  refused(c, "--curvature-samples 100000 is more than the training set's");
  c = config("none");
  c.curvature_samples = 10, c.trace_samples = 0;
  refused(c, "at least one trace sample");
}

BOOST_AUTO_TEST_SUITE_END()
