// The study's sequence parts and its table of the four families side by side: the table's claims
// on made-up sweeps (which norm is best, which way a metric goes, what is beyond the seeds'
// spread), and a study on Fashion-MNIST shrunk to seconds with its LSTM and GPT parts.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "experiments/report/claims.h"
#include "experiments/studies/families.h"
#include "experiments/studies/lm_outputs.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab::experiments;
using normlab::test::read_file;
using normlab::test::run_normlab;
using normlab::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string same_name(const std::string& n) { return n; }

// A sweep where "batch" collapses at batch 2 (0.40-0.44 against 0.80-0.82 at 64) and "layer" does
// not (0.79-0.81 at both), three seeds each.
Report collapsing_sweep() {
  Report r;
  r.sweep_accuracy["batch"] = {{2, {0.40, 0.42, 0.44}}, {64, {0.80, 0.81, 0.82}}};
  r.sweep_accuracy["layer"] = {{2, {0.79, 0.80, 0.81}}, {64, {0.79, 0.80, 0.81}}};
  return r;
}

// The same numbers as bits per character, lower is better: "batch" is 4.0-4.4 at batch 2 and
// 2.0-2.2 at 64, "layer" 2.3-2.5 at both: LayerNorm wins at batch 2, BatchNorm at 64.
Report bits_sweep() {
  Report r;
  r.sweep_accuracy["batch"] = {{2, {4.0, 4.2, 4.4}}, {64, {2.0, 2.1, 2.2}}};
  r.sweep_accuracy["layer"] = {{2, {2.3, 2.4, 2.5}}, {64, {2.3, 2.4, 2.5}}};
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(study_families)

BOOST_AUTO_TEST_CASE(the_table_finds_the_best_norm_and_the_losses_beyond_the_seeds_spread) {
  const Report acc = collapsing_sweep(), bits = bits_sweep();
  const std::string md = studies::families_section(
      {{"MLP", "test accuracy, %", &acc, false, report::kPercent, same_name},
       {"GPT", "validation bits/char", &bits, true, studies::kBitsUnits, same_name}});
  BOOST_TEST_MESSAGE(md);
  // At batch 64 the MLP's best is batch (81.00), and layer (80.00, each with a spread of 1 point
  // over 3 seeds) is not distinguishable from it; at batch 2 layer alone.
  BOOST_TEST(md.find("| MLP | test accuracy, % | 2, 64 | 64: batch (81.00 ± 2.48), tied: layer | 2: layer (80.00 ± 2.48) |") !=
             std::string::npos);
  // Lower is better for the GPT: batch is best at 64 (2.100), layer at 2 (2.400).
  BOOST_TEST(md.find("| GPT | validation bits/char | 2, 64 | 64: batch (2.100 ± 0.248) | 2: layer (2.400 ± 0.248) |") !=
             std::string::npos);
  // batch loses 39 points at batch 2 against its best (64), beyond the spread; layer's best is
  // batch 2 itself (equal means: the first).
  BOOST_TEST(md.find("| MLP | batch | 81.00 ± 2.48 (64) | 2: 42.00 ± 4.97 | 39.00 [") != std::string::npos);
  BOOST_TEST(md.find("| yes |") != std::string::npos);
  BOOST_TEST(md.find("| MLP | layer | 80.00 ± 2.48 (2) | 2: 80.00 ± 2.48 | 0 (its best) | - |") != std::string::npos);
  // Bits gained are positive: batch's 4.2 at batch 2 against its 2.1 at 64.
  BOOST_TEST(md.find("| GPT | batch | 2.100 ± 0.248 (64) | 2: 4.200 ± 0.497 | 2.100 [") != std::string::npos);
  // The reading: BatchNorm worse than LayerNorm at the smallest batch in both families.
  BOOST_TEST(md.find("**MLP** (test accuracy, %): the best at batch 64 is batch") != std::string::npos);
  const size_t gpt = md.find("**GPT**");
  BOOST_REQUIRE(gpt != std::string::npos);
  BOOST_TEST(md.find("the folklore holds here", gpt) != std::string::npos);
  BOOST_TEST(md.substr(0, gpt).find("the folklore holds here") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_reading_says_when_batchnorm_does_not_fall_behind) {
  Report r;  // BatchNorm better than LayerNorm at batch 2, and a tie at 64
  r.sweep_accuracy["batch"] = {{2, {0.90, 0.91, 0.92}}, {64, {0.80, 0.81, 0.82}}};
  r.sweep_accuracy["layer"] = {{2, {0.70, 0.71, 0.72}}, {64, {0.80, 0.81, 0.82}}};
  Report tie;  // indistinguishable at batch 2
  tie.sweep_accuracy["batch"] = {{2, {0.70, 0.80, 0.90}}, {64, {0.80, 0.81, 0.82}}};
  tie.sweep_accuracy["layer"] = {{2, {0.75, 0.80, 0.85}}, {64, {0.80, 0.81, 0.82}}};
  const std::string md = studies::families_section({{"CNN", "test accuracy, %", &r, false, report::kPercent, same_name},
                                                    {"LSTM", "test accuracy, %", &tie, false, report::kPercent, same_name}});
  const size_t lstm = md.find("**LSTM**");
  BOOST_REQUIRE(lstm != std::string::npos);
  BOOST_TEST(md.substr(0, lstm).find("the folklore does not hold here: BatchNorm is better") != std::string::npos);
  BOOST_TEST(md.find("does not show here: the two are not distinguishable", lstm) != std::string::npos);
  // No family with a sweep: no section.
  BOOST_TEST(studies::families_section({{"MLP", "test accuracy, %", nullptr, false, report::kPercent, same_name}}).empty());
}

// The study with its LSTM and GPT parts, shrunk to seconds (no CNN): their folders, sections and
// the table of the families; and their flags' errors.
BOOST_AUTO_TEST_CASE(study_on_images_adds_the_lstm_and_gpt_parts) {
  TempDir t;
  const std::string sample = std::string(NORMLAB_SOURCE_DIR) + "/tests/data/fixtures/text_sample.txt";
  BOOST_REQUIRE_EQUAL(run_normlab({"study", "--quiet", "--train-limit", "600", "--test-limit", "100", "--epochs", "1",
                                   "--seeds", "0,1", "--batch-sizes", "8,32", "--sweep-train-limit", "200", "--no-cnn", "--no-why",
                                   "--lstm-train-limit", "64", "--lstm-test-limit", "40", "--lstm-batch-sizes", "8,32",
                                   "--lstm-batch-size", "16",
                                   "--lstm-norms", "none,layer,batch",
                                   "--gpt-text", sample, "--gpt-train-tokens", "256", "--gpt-batch-sizes", "2,4",
                                   "--gpt-layers", "1", "--gpt-width", "16", "--gpt-heads", "2", "--gpt-block-size", "8",
                                   "--gpt-norms", "layer,batch", "--out", t.path().string()}),
                      0);
  BOOST_TEST(fs::exists(t.path() / "lstm-sweep" / "summary.csv"));
  BOOST_TEST(fs::exists(t.path() / "lstm-compare" / "input_grad_norms.csv"));  // the gradient reaching each step
  BOOST_TEST(fs::exists(t.path() / "lstm-compare" / "steps.csv"));             // the loss curves' steps
  BOOST_TEST(fs::exists(t.path() / "gpt-sweep" / "summary.csv"));
  BOOST_TEST(fs::exists(t.path() / "gpt-sweep" / "steps.csv"));
  BOOST_TEST(!fs::exists(t.path() / "cnn-sweep"));
  // The LSTM parts score on the first 40 test images (--lstm-test-limit), the MLP's on its 100.
  for (const char* part : {"lstm-sweep", "lstm-compare"})
    BOOST_TEST(read_file(t.path() / part / "runs.csv").find("/ 40 test,") != std::string::npos, part);
  BOOST_TEST(read_file(t.path() / "sweep" / "runs.csv").find("/ 100 test,") != std::string::npos);
  const std::string report = read_file(t.path() / "report.md");
  for (const char* s : {"## LSTM: Convergence: no norm vs LayerNorm vs BatchNorm", "## LSTM: Batch-size sensitivity",
                        "Adam lr 0.00035355", "batch 16, 1 epoch", "scored on the first 40 test images", "log10 g_1",
                        "## GPT: Character GPT",
                        "## The four families side by side", "from its first seed's model at batch 2 (eval mode)",
                        "| LSTM | test accuracy, % | 8, 32 |", "| GPT | validation bits/char | 2, 4 |", "**GPT** (",
                        "](gpt-sweep/val_bits_vs_batch.png)"})
    BOOST_TEST(report.find(s) != std::string::npos, "report.md lacks " << s);
  const auto man = nlohmann::json::parse(read_file(t.path() / "manifest.json"));
  BOOST_TEST(man["parts"].dump() == R"(["compare","sweep","lstm-compare","lstm-sweep","gpt-sweep"])");
  // the comparisons: 3 norms x 2 seeds; the sweeps: norms x 2 batch sizes x 2 seeds
  BOOST_TEST(man["runs_total"].get<int>() == 3 * 2 + 3 * 2 * 2 + 3 * 2 + 3 * 2 * 2 + 2 * 2 * 2);
}

BOOST_AUTO_TEST_CASE(sequence_part_flags_are_checked) {
  const auto message = [](std::vector<std::string> args) {
    try {
      run_normlab(args);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  TempDir t;
  const std::string out = (t.path() / "x").string();
  BOOST_TEST(message({"study", "--gpt-norms", "layer,foo", "--out", out}).find("unknown GPT norm variant 'foo'") !=
             std::string::npos);
  BOOST_TEST(message({"study", "--lstm-norms", "foo", "--out", out}).find("unknown norm 'foo'") != std::string::npos);
  const std::string heads = message({"study", "--quiet", "--train-limit", "200", "--test-limit", "50", "--no-cnn",
                                     "--gpt-width", "16", "--gpt-heads", "3", "--out", out});
  BOOST_TEST(heads.find("--gpt-heads 3 must divide --gpt-width 16") != std::string::npos, heads);
  BOOST_TEST(!fs::exists(out), "the failed command created its output folder");
}

BOOST_AUTO_TEST_SUITE_END()
