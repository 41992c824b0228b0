// Data-parallel training (experiments/run/ddp.h) in one process and under mpirun -np 2 and 3: with the
// global batch split over the ranks, the training matches one process on the whole batch (per-step
// losses and final weights, float32 tolerance) without a norm, with LayerNorm and with
// SyncBatchNorm, and every rank ends with the same bits.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "dist/dist.h"
#include "experiments/registry/datasets.h"
#include "experiments/run/trainer.h"
#include "tests/support/compare.h"

using namespace normlab;
using experiments::RunResult;
using experiments::TrainConfig;

namespace {

std::vector<double> weights_of(const RunResult& r) {
  std::vector<double> w;
  for (const auto& [name, t] : r.model->named_parameters())
    for (double v : t.to_vector()) w.push_back(v);
  return w;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ddp)

BOOST_AUTO_TEST_CASE(data_parallel_training_matches_one_process_on_the_global_batch) {
  experiments::DataSpec spec;
  spec.name = "moons", spec.samples = 400, spec.noise = 0.2;
  const experiments::Splits data = experiments::load_data(spec);  // 320 training samples
  for (const char* norm : {"none", "layer", "syncbatch", "batch"}) {
    BOOST_TEST_CONTEXT(norm << ", " << dist::world_size() << " ranks") {
      TrainConfig c;
      c.model.hidden = {16, 16};
      c.model.norm = norm;
      c.epochs = 1, c.batch_size = 12, c.lr = 0.1, c.warmup_steps = 5, c.seed = 3;  // 26 steps of 12 = 12, 6 or 4 per rank
      const RunResult one = experiments::train_run(c, data);  // every rank alone, on the whole batches
      c.distributed = true;
      const RunResult ddp = experiments::train_run(c, data);
      BOOST_REQUIRE(ddp.steps.size() == one.steps.size());
      BOOST_TEST(ddp.steps.size() >= 20u);
      const std::vector<double> w = weights_of(ddp);
      // Every rank holds the same weights, bit for bit.
      const std::vector<double> all = dist::allgather(w.data(), static_cast<int64_t>(w.size()));
      for (int r = 1; r < dist::world_size(); ++r)
        BOOST_TEST(std::memcmp(all.data() + r * w.size(), all.data(), w.size() * sizeof(double)) == 0, "rank " << r);
      if (std::string(norm) == "batch") continue;  // local BatchNorm: statistics of each rank's slice only
      std::vector<double> got, want;
      for (size_t i = 0; i < one.steps.size(); ++i) got.push_back(ddp.steps[i].loss), want.push_back(one.steps[i].loss);
      normlab::test::expect_elements_close("per-step loss", got, want, 2e-5, 1e-6);
      normlab::test::expect_elements_close("final weights", w, weights_of(one), 2e-4, 2e-5);
      BOOST_TEST(std::fabs(ddp.epochs.back().test_acc - one.epochs.back().test_acc) <= 0.01);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_global_batch_that_does_not_split_evenly_is_an_error) {
  if (dist::world_size() == 1) return;  // one rank takes any batch
  experiments::DataSpec spec;
  spec.name = "moons", spec.samples = 200;
  const experiments::Splits data = experiments::load_data(spec);
  TrainConfig c;
  c.model.hidden = {8};
  c.batch_size = 12 * dist::world_size() + 1, c.distributed = true;
  try {
    experiments::train_run(c, data);
    BOOST_ERROR("an uneven split trained");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("multiple of " + std::to_string(dist::world_size())) != std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
