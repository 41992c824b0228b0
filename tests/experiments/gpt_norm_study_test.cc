// The character GPT's norm studies (compare and sweep with --dataset text --arch gpt): the files and
// columns they write on tiny runs of the sample text, a run's final loss against train's with the
// same flags, the n-gram baselines against data::ngram_bits_per_char, BatchNorm's train-mode loss
// (the model left unchanged), the sweep's equal-token rule, and the refused flags and norm names.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "base/error.h"
#include "data/ngram.h"
#include "data/text.h"
#include "experiments/models/archs.h"
#include "experiments/models/language_model.h"
#include "experiments/registry/layers.h"
#include "experiments/studies/lm_runs.h"
#include "experiments/studies/lm_sweep.h"
#include "experiments/support/interrupt.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab;
using normlab::test::capture_output;
using normlab::test::run_normlab;
using normlab::test::run_normlab_quiet;
namespace fs = std::filesystem;

namespace {

const std::string kSample = std::string(NORMLAB_SOURCE_DIR) + "/tests/data/fixtures/text_sample.txt";

// The tiny model every case trains: 1 layer, width 16, 2 heads, block 8.
std::vector<std::string> tiny(std::vector<std::string> args) {
  for (const char* a : {"--dataset", "text", "--text", kSample.c_str(), "--layers", "1", "--width", "16", "--heads", "2",
                        "--block-size", "8"})
    args.push_back(a);
  return args;
}

// A CSV file as rows of named cells (no quoting: the files these cases read have none).
using Row = std::map<std::string, std::string>;
std::vector<Row> read_csv(const fs::path& path) {
  std::istringstream in(test::read_file(path));
  std::string line;
  std::vector<std::string> header;
  std::vector<Row> rows;
  const auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::stringstream s(l);
    std::string c;
    while (std::getline(s, c, ',')) cells.push_back(c);
    if (!l.empty() && l.back() == ',') cells.push_back("");
    return cells;
  };
  std::getline(in, line);
  header = split(line);
  while (std::getline(in, line)) {
    const auto cells = split(line);
    BOOST_REQUIRE_EQUAL(cells.size(), header.size());
    Row r;
    for (size_t i = 0; i < header.size(); ++i) r[header[i]] = cells[i];
    rows.push_back(r);
  }
  return rows;
}

// The error message of running normlab with args (nothing printed), "no error" when it succeeds.
std::string error_of(const std::vector<std::string>& args) {
  std::string message = "no error";
  const std::string printed = capture_output(1, [&] {
    try {
      run_normlab(args);
    } catch (const Error& e) {
      message = e.what();
    }
  });
  BOOST_TEST(printed.empty(), "printed: " << printed);
  return message;
}

void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
  const std::string message = error_of(args);
  for (const auto& needle : needles)
    BOOST_TEST(message.find(needle) != std::string::npos, "lacks \"" << needle << "\": " << message);
}

// One compare run shared by the cases that read it: layer, layer-post and batch, seeds 0 and 1,
// 6 steps, evaluated at step 3 and after step 6; two runs at a time (--threads 2).
struct Compared {
  test::TempDir dir;
  fs::path out = dir.path() / "cmp";
  Compared() {
    const int rc = run_normlab_quiet(tiny({"compare", "--norms", "layer,layer-post,batch", "--seeds", "0,1", "--steps",
                                           "6", "--eval-every", "3", "--threads", "2", "--out", out.string()}));
    if (rc != 0) throw Error("the test's compare run failed");
  }
};
const Compared& compared() {
  static const Compared c;
  return c;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpt_norm_study)

BOOST_AUTO_TEST_CASE(compare_writes_tidy_runs_and_a_summary_with_intervals) {
  const fs::path& out = compared().out;
  for (const char* f : {"runs.csv", "steps.csv", "summary.csv", "baselines.csv", "report.md", "manifest.json"})
    BOOST_TEST(fs::exists(out / f), f);
  const auto runs = read_csv(out / "runs.csv");
  BOOST_TEST(runs.size() == 3u * 2u * 2u);  // norms x seeds x (step 3, final)
  for (const Row& r : runs) {
    for (const char* c : {"norm", "seed", "step", "val_loss", "val_bits_per_char", "batch_size", "position"})
      BOOST_TEST(r.count(c) == 1u, c);
    BOOST_TEST(std::stod(r.at("val_bits_per_char")) == std::stod(r.at("val_loss")) / std::log(2.0),
               boost::test_tools::tolerance(1e-6));
    BOOST_TEST(r.at("position") == (r.at("norm") == "layer-post" ? "post" : "pre"));
    BOOST_TEST(r.at("val_bits_per_char_train_mode").empty() == (r.at("norm") != "batch"));
    BOOST_TEST((r.at("step") == "3" || r.at("step") == "6"));
  }
  const auto summary = read_csv(out / "summary.csv");
  BOOST_REQUIRE_EQUAL(summary.size(), 3u);
  for (const char* c : {"val_bits_per_char_n", "val_bits_per_char_mean", "val_bits_per_char_std",
                        "val_bits_per_char_sem", "val_bits_per_char_ci95_low", "val_bits_per_char_ci95_high"})
    BOOST_TEST(summary[0].at(c) != "nan", c);
  BOOST_TEST(summary[0].at("val_bits_per_char_n") == "2");
  BOOST_TEST(summary[2].at("norm") == "batch");
  BOOST_TEST(summary[2].at("val_bits_per_char_train_mode_n") == "2");
  BOOST_TEST(summary[0].at("val_bits_per_char_train_mode_n") == "0");
}

BOOST_AUTO_TEST_CASE(compare_report_has_the_reading_baselines_and_samples) {
  const std::string md = test::read_file(compared().out / "report.md");
  for (const char* needle : {"LayerNorm (post-norm)", "BatchNorm over tokens (pre-norm)", "**Reading.**",
                             "Lowest mean validation loss", "train mode", "4-gram", "**Samples.**", "temperature 0.8",
                             "The "})
    BOOST_TEST(md.find(needle) != std::string::npos, needle);
  // The baselines are the split's n-gram models (the split train makes with --block-size 8).
  const data::TextCorpus corpus = data::load_text_corpus(kSample, 8, 0.1);
  const auto baselines = read_csv(compared().out / "baselines.csv");
  BOOST_REQUIRE_EQUAL(baselines.size(), 4u);
  for (const Row& b : baselines) {
    const int n = std::stoi(b.at("n"));
    const double expected = data::ngram_bits_per_char(corpus.train, corpus.validation, corpus.vocabulary.size(), n, 0.1);
    BOOST_TEST(std::stod(b.at("val_bits_per_char")) == expected, boost::test_tools::tolerance(1e-7));
  }
}

// Each run trains as train --dataset text does: the same final validation loss, also for BatchNorm
// (whose train-mode evaluations leave the model as it was).
BOOST_AUTO_TEST_CASE(a_compare_run_is_a_train_run) {
  for (const char* norm : {"layer", "batch"}) {
    test::TempDir dir;
    BOOST_REQUIRE(run_normlab_quiet(tiny({"train", "--norm", norm, "--seed", "1", "--steps", "6", "--out",
                                          (dir.path() / "t").string()})) == 0);
    const auto evals = read_csv(dir.path() / "t" / "evals.csv");
    double from_compare = NAN;
    for (const Row& r : read_csv(compared().out / "runs.csv"))
      if (r.at("norm") == norm && r.at("seed") == "1" && r.at("step") == "6") from_compare = std::stod(r.at("val_loss"));
    BOOST_TEST(std::stod(evals.back().at("val_loss")) == from_compare, boost::test_tools::tolerance(1e-7));
  }
}

// Runs side by side (one thread each) give the bits of runs one after another.
BOOST_AUTO_TEST_CASE(results_do_not_depend_on_the_thread_count) {
  test::TempDir dir;
  const fs::path out = dir.path() / "one";
  BOOST_REQUIRE(run_normlab_quiet(tiny({"compare", "--norms", "layer,layer-post,batch", "--seeds", "0,1", "--steps", "6",
                                        "--eval-every", "3", "--threads", "1", "--out", out.string()})) == 0);
  for (const char* f : {"runs.csv", "steps.csv", "summary.csv", "baselines.csv"})
    BOOST_TEST(test::read_file(out / f) == test::read_file(compared().out / f), f);
}

// train --dataset text --seed N draws its initialization and batches from N (as compare's seeds do).
BOOST_AUTO_TEST_CASE(train_on_text_uses_its_seed) {
  test::TempDir dir;
  std::vector<double> loss;
  for (const char* seed : {"0", "1"}) {
    const fs::path out = dir.path() / seed;
    BOOST_REQUIRE(run_normlab_quiet(tiny({"train", "--seed", seed, "--steps", "4", "--out", out.string()})) == 0);
    loss.push_back(std::stod(read_csv(out / "evals.csv").back().at("val_loss")));
  }
  BOOST_TEST(loss[0] != loss[1]);
}

BOOST_AUTO_TEST_CASE(train_mode_loss_leaves_the_model_unchanged) {
  const data::TextCorpus corpus = data::load_text_corpus(kSample, 8, 0.1);
  for (nn::BlockNorm norm : {nn::BlockNorm::Batch, nn::BlockNorm::Layer}) {
    experiments::CharModelSpec spec;
    spec.vocab_size = corpus.vocabulary.size();
    spec.block_size = 8;
    spec.gpt.n_layer = 1, spec.gpt.n_head = 2, spec.gpt.width = 16, spec.gpt.norm = norm;
    autograd::Generator gen(3);
    experiments::CharModel m(spec, gen);
    m.module().eval();
    std::vector<std::vector<double>> before;
    for (const auto& kv : m.module().state_dict()) before.push_back(kv.second.to_vector());
    const double eval = experiments::window_loss(m, corpus.validation, 8, 4);
    const double train = experiments::train_mode_window_loss(m, corpus.validation, 8, 4);
    size_t i = 0;
    for (const auto& kv : m.module().state_dict()) BOOST_TEST(kv.second.to_vector() == before[i++], kv.first);
    BOOST_TEST(!m.module().is_training());
    // BatchNorm: the batches' own statistics differ from the running ones (0 and 1 at first);
    // LayerNorm does not depend on the mode.
    if (norm == nn::BlockNorm::Batch) BOOST_TEST(std::fabs(train - eval) > 1e-6);
    else BOOST_TEST(train == eval, boost::test_tools::tolerance(1e-12));
  }
}

BOOST_AUTO_TEST_CASE(unknown_and_misplaced_norm_names_are_refused) {
  expect_error(tiny({"compare", "--norms", "layer,lyer", "--steps", "6"}), {"unknown norm 'lyer'", "layer-post", "batch-post"});
  expect_error(tiny({"compare", "--norms", "group", "--steps", "6"}), {"--norms group", "a GPT takes", "layer-post"});
  expect_error(tiny({"sweep", "--norms", "instance", "--train-tokens", "64"}), {"--norms instance", "a GPT takes"});
  expect_error({"compare", "--dataset", "moons", "--norms", "layer-post"}, {"--norms layer-post", "--dataset text"});
  expect_error(tiny({"compare", "--arch", "lstm", "--steps", "6"}), {"--arch lstm", "--arch gpt"});
  expect_error(tiny({"compare", "--position", "post", "--steps", "6"}), {"--position", "layer-post"});
}

// The GPT's norms are the norm registry's entries (their block_norm), their positions a property of
// the gpt arch: the names --norms takes, what each stands for, and the messages that list them.
BOOST_AUTO_TEST_CASE(gpt_norms_are_registry_entries_with_the_arch_positions) {
  namespace ex = experiments;
  const std::vector<std::string> names{"layer", "layer-post", "rms", "rms-post", "batch", "batch-post", "none", "noisybatch", "noisybatch-post"};
  BOOST_TEST(ex::studies::gpt_variant_names() == names, boost::test_tools::per_element());
  BOOST_TEST(ex::norm_choice_names(ex::arch("gpt")) == names, boost::test_tools::per_element());
  for (const std::string& n : names) {
    const auto c = ex::find_norm_choice(ex::arch("gpt"), n);
    BOOST_REQUIRE(c.has_value());
    const std::string base = n.size() > 5 && n.substr(n.size() - 5) == "-post" ? n.substr(0, n.size() - 5) : n;
    BOOST_TEST(c->entry == &ex::norm(base));  // the registry's own entry
    BOOST_TEST((c->position == nn::NormPosition::Post) == (base != n));
    BOOST_TEST((ex::studies::gpt_variant(n).norm == *ex::norm(base).block_norm));
  }
  BOOST_TEST(!ex::find_norm_choice(ex::arch("gpt"), "none-post").has_value());
  BOOST_TEST(!ex::find_norm_choice(ex::arch("gpt"), "group").has_value());
  BOOST_TEST(!ex::find_norm_choice(ex::arch("mlp"), "layer").has_value());  // no norm positions: --norm names
  BOOST_TEST(ex::studies::variant_display("layer") == "LayerNorm (pre-norm)");
  BOOST_TEST(ex::studies::variant_display("batch-post") == "BatchNorm over tokens (post-norm)");
  BOOST_TEST(ex::studies::variant_display("none") == "no norm");
  BOOST_TEST(ex::studies::variant_has_batch_statistics("batch-post"));
  BOOST_TEST(!ex::studies::variant_has_batch_statistics("rms"));
  BOOST_CHECK_EXCEPTION(ex::studies::gpt_variant("group"), Error, [](const Error& e) {
    return std::string(e.what()) ==
           "--norms group: a GPT takes the norms layer, layer-post, rms, rms-post, batch, batch-post, none, noisybatch, noisybatch-post "
           "(the block norm, pre-norm unless it ends in -post)";
  });
  BOOST_CHECK_EXCEPTION(ex::gpt_norm("group"), Error, [](const Error& e) {
    return std::string(e.what()) ==
           "--norm group (GroupNorm) does not fit a GPT: --arch gpt takes --norm layer, rms, batch, none or noisybatch";
  });
  BOOST_TEST((ex::gpt_norm("rms") == nn::BlockNorm::RMS));
}

BOOST_AUTO_TEST_CASE(sweep_trains_the_same_tokens_at_every_batch_size) {
  test::TempDir dir;
  const fs::path out = dir.path() / "sw";
  BOOST_REQUIRE(run_normlab_quiet(tiny({"sweep", "--norms", "layer,batch", "--batch-sizes", "1,2,4", "--seeds", "0",
                                        "--train-tokens", "256", "--out", out.string()})) == 0);
  for (const char* f : {"runs.csv", "summary.csv", "baselines.csv", "report.md", "manifest.json"}) BOOST_TEST(fs::exists(out / f), f);
  const auto runs = read_csv(out / "runs.csv");
  BOOST_REQUIRE_EQUAL(runs.size(), 2u * 3u);  // one row per run: its final evaluation
  for (const Row& r : runs) {
    const int64_t batch = std::stoll(r.at("batch_size"));
    BOOST_TEST(std::stoll(r.at("steps_planned")) == 256 / (batch * 8));
    BOOST_TEST(r.at("tokens") == "256");
    BOOST_TEST(r.at("all_windows") == "1");
  }
  const std::string md = test::read_file(out / "report.md");
  for (const char* needle : {"256 training tokens per run", "steps = round(256 / (batch x 8))", "at every batch size",
                             "**Reading.**", "train mode minus eval mode",
                             "**Samples.** One per norm, from its first seed's model at batch 2 (eval mode)",
                             "- LayerNorm (pre-norm) (seed 0, ", "- BatchNorm over tokens (pre-norm) (seed 0, "})
    BOOST_TEST(md.find(needle) != std::string::npos, needle);
  // The loss curves and samples are those of the middle batch size: steps.csv holds its runs' steps.
  const auto steps = read_csv(out / "steps.csv");
  BOOST_REQUIRE_EQUAL(steps.size(), 2u * (256 / (2 * 8)));
  for (const Row& r : steps) BOOST_TEST(r.at("batch_size") == "2");
  using experiments::studies::lm_sweep_example_batch;
  BOOST_TEST(lm_sweep_example_batch({1, 2, 4, 16, 64}) == 4);
  BOOST_TEST(lm_sweep_example_batch({16, 2}) == 2);  // the lower middle, whatever the order given
  BOOST_TEST(lm_sweep_example_batch({8}) == 8);
  // The rule when the budget does not divide: round(tokens / (b T)), at least one step.
  using experiments::studies::lm_sweep_steps;
  BOOST_TEST(lm_sweep_steps(100, 4, 8) == 3);   // 3.125
  BOOST_TEST(lm_sweep_steps(112, 4, 8) == 4);   // 3.5 rounds up
  BOOST_TEST(lm_sweep_steps(10, 64, 64) == 1);  // below one batch: one step
}

BOOST_AUTO_TEST_CASE(sweep_refuses_what_its_text_protocol_sets_itself) {
  expect_error(tiny({"sweep", "--over", "lr"}), {"--over lr", "batch size"});
  expect_error(tiny({"sweep", "--batch-size", "4"}), {"--batch-size", "--batch-sizes"});
  expect_error(tiny({"sweep", "--steps", "10"}), {"--steps", "--train-tokens"});
  expect_error(tiny({"sweep", "--warmup", "2"}), {"--warmup", "a tenth"});
  expect_error(tiny({"sweep", "--train-tokens", "4"}), {"--train-tokens 4", "one window"});
  expect_error({"sweep", "--dataset", "moons", "--train-tokens", "64"}, {"--train-tokens", "--dataset text"});
}

// Ctrl-C in the second run (one thread: one run at a time): the first run's results are written,
// the report says so, exit status 130; --resume completes them.
BOOST_AUTO_TEST_CASE(ctrl_c_writes_the_runs_finished_and_resume_completes_them) {
  test::TempDir dir;
  const fs::path out = dir.path() / "stopped";
  experiments::interrupt_after_steps(8);  // run 1: steps 1-6; run 2 stops after its step 2
  int rc = -1;
  capture_output(2, [&] {
    rc = run_normlab_quiet(tiny({"compare", "--norms", "layer,rms", "--seeds", "0", "--steps", "6", "--threads", "1", "--out",
                                  out.string()}));
  });
  experiments::clear_interrupt();
  BOOST_TEST(rc == 130);
  const auto runs = read_csv(out / "runs.csv");
  BOOST_REQUIRE(!runs.empty());
  for (const Row& r : runs) BOOST_TEST(r.at("norm") == "layer");
  const std::string md = test::read_file(out / "report.md");
  BOOST_TEST(md.find("Interrupted (Ctrl-C): 1 of 2 runs finished") != std::string::npos, md);
  // --resume keeps the finished run and trains the other: the files of a command never stopped.
  const std::vector<std::string> flags = tiny({"compare", "--norms", "layer,rms", "--seeds", "0", "--steps", "6"});
  std::vector<std::string> resume = flags, fresh = flags;
  for (const std::string& a : {std::string("--resume"), std::string("--out"), out.string()}) resume.push_back(a);
  for (const std::string& a : {std::string("--out"), (dir.path() / "fresh").string()}) fresh.push_back(a);
  BOOST_REQUIRE(run_normlab_quiet(resume) == 0);
  BOOST_REQUIRE(run_normlab_quiet(fresh) == 0);
  for (const char* f : {"runs.csv", "steps.csv", "summary.csv"})
    BOOST_TEST(test::read_file(out / f) == test::read_file(dir.path() / "fresh" / f), f);
  BOOST_TEST(test::read_file(out / "manifest.json").find("\"runs_reused\": 1") != std::string::npos);
  BOOST_TEST(test::read_file(out / "report.md").find("Interrupted") == std::string::npos);
  BOOST_TEST(!fs::exists(out / "finished-runs.jsonl"));
  // Other flags: refused, naming the flag that differs.
  std::vector<std::string> other = tiny({"compare", "--norms", "layer,rms", "--seeds", "0", "--steps", "7", "--resume",
                                         "--out", out.string()});
  expect_error(other, {"--resume", "--steps 6 then, --steps 7 now"});
}

BOOST_AUTO_TEST_SUITE_END()
