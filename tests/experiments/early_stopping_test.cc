// Early stopping (TrainConfig::early_stopping) and the defaults of train and compare on a CSV file:
// the run stops `patience` epochs after its lowest validation loss, ends with that epoch's weights
// (its evaluation reproduces the epoch's record), refuses to run without a validation set, and a
// CSV file without flags gets a batch size and epochs from its size, said in the output.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "experiments/models/evaluate.h"
#include "experiments/registry/datasets.h"
#include "experiments/run/trainer.h"
#include "serialize/safetensors.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab::experiments;
using normlab::test::TempDir;
using normlab::test::capture_output;
using normlab::test::read_file;
using normlab::test::run_normlab;

namespace {

// A small noisy set that a wide network overfits within a few epochs at a high learning rate.
Splits noisy_moons() {
  DataSpec d;
  d.name = "moons";
  d.samples = 160;
  d.noise = 0.45;
  d.validation_fraction = 0.25;
  return load_data(d);
}

TrainConfig overfitting_config() {
  TrainConfig c;
  c.model.hidden = {128, 128};
  c.epochs = 200;
  c.batch_size = 8;
  c.lr = 0.1;
  c.schedule = "none";
  c.early_stopping = 3;
  return c;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(early_stopping)

BOOST_AUTO_TEST_CASE(stops_after_patience_epochs_and_keeps_the_best_weights) {
  const Splits s = noisy_moons();
  const RunResult r = train_run(overfitting_config(), s);
  BOOST_REQUIRE(r.best_epoch > 0);
  BOOST_TEST(r.stopped_early);
  BOOST_TEST(r.epochs.size() < 200u);
  // It stopped exactly `patience` epochs after the best, whose validation loss is the lowest of all.
  BOOST_TEST(r.epochs.back().epoch == r.best_epoch + 3);
  const EpochRecord& best = final_epoch(r);
  BOOST_TEST(best.epoch == r.best_epoch);
  for (const EpochRecord& e : r.epochs) BOOST_TEST(e.val_loss >= best.val_loss);
  for (const EpochRecord& e : r.epochs)
    if (e.epoch > r.best_epoch) BOOST_TEST(e.val_loss >= best.val_loss);
  // The model the run ends with is the best epoch's: evaluating it gives that epoch's record.
  r.model->eval();
  const EvalResult v = evaluate(*r.model, s.validation, 1000), t = evaluate(*r.model, s.test, 1000);
  BOOST_TEST(v.loss == best.val_loss);
  BOOST_TEST(t.score == best.test_acc);
  BOOST_TEST(t.loss != r.epochs.back().test_loss);  // not the last epoch's weights
}

BOOST_AUTO_TEST_CASE(needs_a_validation_set) {
  DataSpec d;
  d.name = "moons";
  d.samples = 100;
  const Splits s = load_data(d);  // no validation split
  TrainConfig c = overfitting_config();
  BOOST_CHECK_EXCEPTION(check_run(c, s), normlab::Error, [](const normlab::Error& e) {
    return std::string(e.what()).find("--early-stopping watches the validation loss") != std::string::npos &&
           std::string(e.what()).find("--val-fraction") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(a_csv_file_gets_defaults_from_its_size) {
  // 60 rows: 15 test (25%), 6 validation (10% of the file), 39 train; batch: the power of two
  // nearest 39 / 8 = 4.9, at least 8; epochs: 20000 steps at 5 steps an epoch, at most 200.
  TempDir t;
  const std::string csv = std::string(NORMLAB_SOURCE_DIR) + "/tests/experiments/fixtures/iris_like.csv";
  int rc = -1;
  const std::string out = capture_output(1, [&] {
    rc = run_normlab({"train", "--csv", csv, "--label", "species", "--test-fraction", "0.25", "--hidden", "8", "--out",
                      (t.path() / "a").string()});
  });
  BOOST_REQUIRE(rc == 0);
  BOOST_TEST(out.find("Defaults for a CSV file of 39 training rows (the flags not given): batch 8, at most 200 "
                      "epochs, early stopping after 10 epochs") != std::string::npos, out);
  const auto m = nlohmann::json::parse(read_file(t.path() / "a" / "manifest.json"));
  const auto& cfg = m["config"]["config"];
  BOOST_TEST(cfg["batch_size"] == 8);
  BOOST_TEST(cfg["epochs"] == 200);
  BOOST_TEST(cfg["early_stopping"] == 10);
  BOOST_TEST(cfg["optimizer"]["name"] == "adam");
  const std::string report = read_file(t.path() / "a" / "report.md");
  BOOST_TEST(report.find("Defaults for a CSV file of 39 training rows") != std::string::npos);
  BOOST_TEST(report.find("Early stopping (`--early-stopping 10`)") != std::string::npos, report);
  // The checkpoint is the best epoch's, and says so.
  const auto meta = normlab::serialize::load_safetensors((t.path() / "a" / "model.safetensors").string()).metadata;
  BOOST_TEST(meta.count("best_epoch") == 1u);
  // Flags given win: no defaults are chosen for them, and the sentence names only the others.
  const std::string given = capture_output(1, [&] {
    rc = run_normlab({"train", "--csv", csv, "--label", "species", "--test-fraction", "0.25", "--hidden", "8",
                      "--batch-size", "4", "--epochs", "2", "--early-stopping", "1", "--out", (t.path() / "b").string()});
  });
  BOOST_REQUIRE(rc == 0);
  BOOST_TEST(given.find("Defaults for a CSV file of 39 training rows (the flags not given): a validation split of "
                        "10% (6 rows) and Adam lr 0.001") != std::string::npos, given);
  const auto mb = nlohmann::json::parse(read_file(t.path() / "b" / "manifest.json"));
  BOOST_TEST(mb["config"]["config"]["batch_size"] == 4);
  BOOST_TEST(mb["config"]["config"]["epochs"] == 2);
}

BOOST_AUTO_TEST_SUITE_END()
