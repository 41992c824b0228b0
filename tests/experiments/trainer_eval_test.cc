// train_run's evaluation schedule (eval_last: only the last N epochs are evaluated, as the sweep
// does), its callbacks (each epoch reported as soon as it ends) and its time breakdown (the parts
// of a run add up to no more than its wall time).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "experiments/registry/datasets.h"
#include "experiments/run/trainer.h"

using namespace normlab::experiments;

namespace {

TrainConfig small_config() {
  TrainConfig c;
  c.model.hidden = {8};
  c.epochs = 4;
  c.batch_size = 16;
  c.lr = 0.1;
  c.warmup_steps = 2;
  return c;
}

Splits moons() {
  DataSpec d;
  d.name = "moons";
  d.samples = 200;
  return load_data(d);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trainer_eval)

BOOST_AUTO_TEST_CASE(eval_last_evaluates_only_the_last_epochs) {
  const Splits s = moons();
  TrainConfig c = small_config();
  c.eval_last = 2;
  const RunResult r = train_run(c, s);
  BOOST_REQUIRE_EQUAL(r.epochs.size(), 4u);
  for (const EpochRecord& e : r.epochs) {
    BOOST_TEST_CONTEXT("epoch " << e.epoch) {
      const bool evaluated = e.epoch > 2;
      BOOST_TEST(std::isfinite(e.test_acc) == evaluated);
      BOOST_TEST(std::isfinite(e.test_loss) == evaluated);
      BOOST_TEST(std::isfinite(e.train_loss));  // the training metrics are kept every epoch
    }
  }
  // The same run evaluated every epoch reaches the same model: the evaluated epochs agree.
  c.eval_last = 0;
  const RunResult all = train_run(c, s);
  for (const EpochRecord& e : all.epochs) BOOST_TEST(std::isfinite(e.test_acc));
  for (size_t i = 2; i < 4; ++i) {
    BOOST_TEST(all.epochs[i].test_acc == r.epochs[i].test_acc);
    BOOST_TEST(all.epochs[i].test_loss == r.epochs[i].test_loss);
  }
}

BOOST_AUTO_TEST_CASE(each_epoch_is_reported_as_soon_as_it_ends) {
  const Splits s = moons();
  const TrainConfig c = small_config();
  std::vector<std::string> events;
  std::vector<EpochRecord> reported;
  const RunResult r = train_run(
      c, s, [&](int64_t done, int64_t) { events.push_back("step " + std::to_string(done)); },
      [&](const EpochRecord& e) {
        events.push_back("epoch " + std::to_string(e.epoch));
        reported.push_back(e);
      });
  // Every epoch's callback comes right after its last step, before the next epoch's first step.
  const int64_t per_epoch = steps_per_run(c, s) / c.epochs;
  BOOST_REQUIRE_GT(per_epoch, 1);
  std::vector<std::string> want;
  for (int64_t e = 1; e <= c.epochs; ++e) {
    for (int64_t k = 1; k <= per_epoch; ++k) want.push_back("step " + std::to_string((e - 1) * per_epoch + k));
    want.push_back("epoch " + std::to_string(e));
  }
  BOOST_TEST(events == want, boost::test_tools::per_element());
  // With the records the result keeps.
  BOOST_REQUIRE_EQUAL(reported.size(), r.epochs.size());
  for (size_t i = 0; i < reported.size(); ++i) {
    BOOST_TEST(reported[i].step == r.epochs[i].step);
    BOOST_TEST(reported[i].test_acc == r.epochs[i].test_acc);
  }
}

BOOST_AUTO_TEST_CASE(batchnorm_is_evaluated_three_ways_at_the_same_epochs_as_the_test_set) {
  // The final score is the last epoch's: its precise and test-batch accuracies come from that
  // epoch too, and no other epoch pays for them.
  TrainConfig c = small_config();
  c.model.norm = "batch";
  c.bn_three_ways = true;
  c.epochs = 3;
  c.eval_last = 1;
  const RunResult r = train_run(c, moons());
  BOOST_REQUIRE(r.epochs.size() == 3u);
  for (size_t i = 0; i < 2; ++i) {
    BOOST_TEST(std::isnan(r.epochs[i].test_acc));
    BOOST_TEST(std::isnan(r.epochs[i].test_acc_precise));
    BOOST_TEST(std::isnan(r.epochs[i].test_acc_batch));
  }
  BOOST_TEST(std::isfinite(r.epochs[2].test_acc));
  BOOST_TEST(std::isfinite(r.epochs[2].test_acc_precise));
  BOOST_TEST(std::isfinite(r.epochs[2].test_acc_batch));
}

BOOST_AUTO_TEST_CASE(the_time_breakdown_fits_in_the_run) {
  TrainConfig c = small_config();
  c.model.norm = "batch";
  c.bn_three_ways = true;
  c.stats_every = 3;
  const RunResult r = train_run(c, moons());
  for (double part : {r.step_seconds, r.data_seconds, r.stats_seconds, r.eval_seconds, r.bn_eval_seconds})
    BOOST_TEST(part > 0);
  BOOST_TEST(r.step_seconds + r.data_seconds + r.stats_seconds + r.eval_seconds + r.bn_eval_seconds <= r.seconds);
  BOOST_TEST(r.cpu_seconds >= 0);
}

BOOST_AUTO_TEST_SUITE_END()
