// The landscape probes in a GPT's run: a probed run trains exactly as the run without (every block
// norm, noisy BatchNorm over tokens included), the layers are the embeddings, each block and the
// final norm with the head, the curvature is taken at the four points, bad settings are refused,
// and `compare --dataset text` with the probes writes the Why section and its tables.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/text.h"
#include "experiments/run/lm_run.h"
#include "tests/support/csv.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab;
using namespace normlab::experiments;
namespace fs = std::filesystem;

namespace {

const std::string kSample = std::string(NORMLAB_SOURCE_DIR) + "/tests/data/fixtures/text_sample.txt";

std::shared_ptr<const data::TextCorpus> corpus() {
  static const auto c = std::make_shared<const data::TextCorpus>(data::load_text_corpus(kSample, 8, 0.1));
  return c;
}

// A GPT of 2 blocks, width 16, block 8; AdamW as the studies train it, 12 steps of batch 4.
LmRunSpec spec(nn::BlockNorm norm) {
  LmRunSpec s;
  s.variant = nn::block_norm_name(norm);
  s.corpus = corpus();
  LmTrainConfig& c = s.config;
  c.model.vocab_size = s.corpus->vocabulary.size();
  c.model.block_size = 8;
  c.model.gpt.n_layer = 2, c.model.gpt.n_head = 2, c.model.gpt.width = 16, c.model.gpt.norm = norm;
  c.train.optimizer = "adamw";
  c.train.lr = 3e-3, c.train.weight_decay = 0.1, c.train.batch_size = 4, c.train.seed = 2;
  c.train.schedule = "none", c.train.warmup_steps = 0;
  c.train.model.norm = s.variant;
  c.steps = 12;
  return s;
}

// A CSV file's rows, each line's cells.
std::vector<std::vector<std::string>> csv_rows(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::string text = test::read_file(path), line;
  for (char c : text)
    if (c == '\n') rows.push_back(test::csv_cells(line)), line.clear();
    else line += c;
  return rows;
}

std::vector<std::vector<double>> state_values(CharModel& m) {
  std::vector<std::vector<double>> v;
  for (const auto& [name, t] : m.module().state_dict()) v.push_back(t.to_vector());
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lm_probes)

BOOST_AUTO_TEST_CASE(a_probed_gpt_run_trains_exactly_as_the_run_without_probes) {
  for (nn::BlockNorm norm : {nn::BlockNorm::Layer, nn::BlockNorm::Batch, nn::BlockNorm::NoisyBatch, nn::BlockNorm::None}) {
    BOOST_TEST_CONTEXT(nn::block_norm_name(norm)) {
      LmRunSpec s = spec(norm);
      std::shared_ptr<CharModel> plain_model, probed_model;
      const RunResult plain = train_lm_run(s, {}, {}, &plain_model);
      s.config.train.probe_every = 3, s.config.train.curvature_samples = 6;
      s.config.train.curvature_iters = 4, s.config.train.trace_samples = 2;
      check_lm_probes(s.config, *s.corpus);
      const RunResult probed = train_lm_run(s, {}, {}, &probed_model);
      BOOST_TEST(state_values(*probed_model) == state_values(*plain_model));
      BOOST_REQUIRE_EQUAL(probed.steps.size(), plain.steps.size());
      for (size_t i = 0; i < plain.steps.size(); ++i) BOOST_TEST(probed.steps[i].loss == plain.steps[i].loss);
      BOOST_TEST(plain.shifts.empty());
      // Probes at steps 0, 3, 6, 9: four layers each (embeddings, 2 blocks, final norm and head).
      BOOST_TEST_REQUIRE(probed.shifts.size() == 16u);
      const std::vector<std::string> names{"embeddings", "block 1", "block 2", "final norm and head"};
      for (size_t i = 0; i < probed.shifts.size(); ++i) {
        const ShiftRecord& x = probed.shifts[i];
        BOOST_TEST(x.name == names[i % 4]);
        BOOST_TEST(x.layer == static_cast<int>(i % 4));
        BOOST_TEST(x.step == static_cast<int64_t>(3 * (i / 4)));
        if (x.layer == 0) BOOST_TEST(x.ics == 0.0);
        else BOOST_TEST((std::isfinite(x.ics) && x.ics > 0));
      }
      BOOST_TEST(probed.landscape.size() == 20u);  // five points per probe
      BOOST_TEST(probed.landscape.front().eta == 0.25 * 3e-3);
      BOOST_TEST_REQUIRE(probed.curvature.size() == 4u);
      const std::vector<std::pair<std::string, int64_t>> points{{"init", 0}, {"quarter", 3}, {"half", 6}, {"end", 12}};
      for (size_t i = 0; i < 4; ++i) {
        BOOST_TEST(probed.curvature[i].point == points[i].first);
        BOOST_TEST(probed.curvature[i].step == points[i].second);
        BOOST_TEST(std::isfinite(probed.curvature[i].eigenvalue));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(probe_settings_a_language_model_cannot_run_are_refused) {
  const auto refused = [](const LmTrainConfig& c, const std::string& words) {
    try {
      check_lm_probes(c, *corpus());
      BOOST_ERROR("no error; expected '" << words << "'");
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
  };
  LmTrainConfig c = spec(nn::BlockNorm::Layer).config;
  c.train.probe_every = -1;
  refused(c, "--probe-every must be 0 (off) or a number of steps");
  c = spec(nn::BlockNorm::Layer).config;
  c.train.curvature_samples = 1000000;
  refused(c, "--curvature-samples 1000000 is more than the training split's");
  c = spec(nn::BlockNorm::Layer).config;
  c.train.probe_every = 2, c.model.arch = "lstm";
  refused(c, "measure the GPT's blocks: give --arch gpt, not --arch lstm");
  c = spec(nn::BlockNorm::Layer).config;
  c.train.curvature_samples = 4, c.train.trace_samples = 0;
  refused(c, "at least one trace sample");
}

BOOST_AUTO_TEST_CASE(compare_on_text_writes_the_why_section_and_its_tables) {
  const test::TempDir dir;
  const fs::path out = dir.path() / "out";
  const int rc = test::run_normlab_quiet({"compare", "--dataset", "text", "--text", kSample, "--layers", "1", "--width",
                                          "16", "--heads", "2", "--block-size", "8", "--steps", "8", "--batch-size", "4",
                                          "--norms", "layer-post,batch,noisybatch,none", "--seeds", "0,1",
                                          "--probe-every", "4", "--curvature-samples", "4", "--out", out.string()});
  BOOST_TEST_REQUIRE(rc == 0);
  const std::string report = test::read_file(out / "report.md");
  BOOST_TEST(report.find("### Why: internal covariate shift and the landscape") != std::string::npos);
  BOOST_TEST(report.find("| LayerNorm (post-norm) | 2 |") != std::string::npos);
  BOOST_TEST(report.find("**Noisy BatchNorm against BatchNorm.** Final validation loss (bits per character)") !=
             std::string::npos);
  BOOST_TEST(report.find("first 4 training windows") != std::string::npos);
  // shifts.csv: norm and seed, then the probe's columns; three layers a probe (steps 0 and 4).
  const auto shifts = csv_rows(out / "shifts.csv");
  BOOST_TEST_REQUIRE(shifts.size() == 1u + 4 * 2 * 2 * 3);
  BOOST_TEST(shifts[0] == (std::vector<std::string>{"norm", "seed", "step", "layer", "weight", "ics", "ics_relative",
                                                     "cosine"}));
  BOOST_TEST(shifts[1][0] == "layer-post");
  BOOST_TEST(shifts[1][4] == "embeddings");
  BOOST_TEST(shifts[3][4] == "final norm and head");
  // why.csv: one row per variant; why_claims.csv: the claims against none and noisy against plain.
  const auto why = csv_rows(out / "why.csv");
  BOOST_TEST(why.size() == 5u);
  const std::string claims = test::read_file(out / "why_claims.csv");
  BOOST_TEST(claims.find("noisy BatchNorm trains as well as BatchNorm,noisybatch,batch,final_score") != std::string::npos);
  BOOST_TEST(claims.find("reduces internal covariate shift,layer-post,none,ics") != std::string::npos);
  for (const char* f : {"landscape.csv", "curvature.csv"}) BOOST_TEST(fs::exists(out / f), f);
}

BOOST_AUTO_TEST_SUITE_END()
