// `normlab study` (make run): the comparison and the batch-size sweep of the MLP in one report;
// on Fashion-MNIST without --quick also the study's CNN (a comparison, a sweep), its LSTM (a
// sweep), a character GPT on a text corpus (a sweep) and a table of the families side by side.
#include <limits>
#include <memory>

#include "data/text.h"

#include "experiments/commands/cli.h"
#include "experiments/commands/flags.h"
#include "experiments/commands/presets.h"
#include "experiments/commands/training.h"
#include "experiments/models/archs.h"
#include "experiments/registry/layers.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxBatch = std::numeric_limits<int32_t>::max();

class StudyCommand : public TrainingCommand {
 public:
  StudyCommand()
      : TrainingCommand({.name = "study",
                         .lr_help = "peak learning rate (the sweep: at batch 128, scaled linearly)",
                         .val_fraction_default = study_help("--val-fraction"),
                         .stats_every_note = "; the comparison only",
                         .one_arch = true,
                         .classification_only = true,
                         .records = "compare/records.json"}) {}

 protected:
  void add_own_flags(CLI::App& a) override {
    a.add_option("--norms", s_.norms, "norms to compare: " + norm_names())->delimiter(',')->check(norm_name());
    a.add_option("--seeds", s_.seeds, "seeds")->delimiter(',')->check(seed_value());
    preset_default(a.add_option("--batch-sizes", s_.batch_sizes, "batch sizes of the sweep")
                       ->delimiter(',')
                       ->check(whole(1, kMaxBatch)),
                   study_help("--batch-sizes"));
    a.add_option("--target", s_.target, "target accuracy of the comparison")->check(real(0, 1));
    preset_default(a.add_option("--sweep-train-limit", s_.sweep_train_limit,
                                "the sweep trains on a random subset of N training samples (0: all)")
                       ->check(whole(0, kMaxInt)),
                   study_help("--sweep-train-limit"));
    add_cnn_part_flags(a);
    add_sequence_part_flags(a);
    add_why_part_flags(a);
  }

  // The study's Why part (Fashion-MNIST without --quick).
  void add_why_part_flags(CLI::App& a) {
    a.add_flag("--no-why", s_.no_why,
               "leave out the Why part: the MLP's landscape probes and the LSTM comparison's (Fashion-MNIST without "
               "--quick only)");
    a.add_option("--why-train-limit", s_.why_train_limit, "the Why part trains on a random subset of N training images")
        ->check(whole(128, kMaxInt))
        ->capture_default_str();
    a.add_option("--why-epochs", s_.why_epochs, "epochs of the Why part (plain SGD, batch 128, a constant rate)")
        ->check(whole(1, 1000))
        ->capture_default_str();
    a.add_option("--why-lr", s_.why_lr, "the Why part's SGD learning rate")->check(real(1e-12, 1e6))->capture_default_str();
    a.add_option("--why-norms", s_.why_norms, "norms of the Why part")
        ->delimiter(',')
        ->check(norm_name())
        ->capture_default_str();
  }

  // The study's CNN part (Fashion-MNIST without --quick).
  void add_cnn_part_flags(CLI::App& a) {
    a.add_flag("--no-cnn", s_.no_cnn, "leave out the CNN part (Fashion-MNIST without --quick only)");
    a.add_option("--cnn-train-limit", s_.cnn_train_limit, "the CNN part trains on a random subset of N training images")
        ->check(whole(1, kMaxInt))
        ->capture_default_str();
    a.add_option("--cnn-epochs", s_.cnn_epochs, "epochs of the CNN comparison (its sweep: 1)")
        ->check(whole(1, 1000))
        ->capture_default_str();
    a.add_option("--cnn-batch-size", s_.cnn_batch_size,
                 "batch size of the CNN comparison (its lr: --lr x batch / 128, as in the sweeps)")
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--cnn-batch-sizes", s_.cnn_batch_sizes, "batch sizes of the CNN sweep")
        ->delimiter(',')
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--cnn-norms", s_.cnn_norms, "norms of the CNN comparison")
        ->delimiter(',')
        ->check(norm_name())
        ->capture_default_str();
    a.add_option("--cnn-sweep-norms", s_.cnn_sweep_norms, "norms of the CNN sweep")
        ->delimiter(',')
        ->check(norm_name())
        ->capture_default_str();
  }

  // The study's LSTM and GPT parts (Fashion-MNIST without --quick only).
  void add_sequence_part_flags(CLI::App& a) {
    a.add_flag("--no-lstm", s_.no_lstm, "leave out the LSTM part (Fashion-MNIST without --quick only)");
    a.add_option("--lstm-train-limit", s_.lstm_train_limit, "the LSTM part trains on a random subset of N training images")
        ->check(whole(1, kMaxInt))
        ->capture_default_str();
    a.add_option("--lstm-test-limit", s_.lstm_test_limit, "the LSTM part scores on the first N test images (0: all)")
        ->check(whole(0, kMaxInt))
        ->capture_default_str();
    a.add_option("--lstm-epochs", s_.lstm_epochs, "epochs of the LSTM sweep")->check(whole(1, 1000))->capture_default_str();
    a.add_option("--lstm-lr", s_.lstm_lr, "the LSTM's Adam learning rate at batch 128 (at batch b: x sqrt(b / 128))")
        ->check(real(1e-12, 1e6))
        ->capture_default_str();
    a.add_option("--lstm-batch-sizes", s_.lstm_batch_sizes, "batch sizes of the LSTM sweep")
        ->delimiter(',')
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--lstm-batch-size", s_.lstm_batch_size,
                 "batch size of the LSTM comparison (loss curves, the gradient reaching each time step)")
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--lstm-norms", s_.lstm_norms, "norms of the LSTM comparison and sweep")->delimiter(',')->check(norm_name())->capture_default_str();
    a.add_flag("--no-gpt", s_.no_gpt, "leave out the character GPT part (Fashion-MNIST without --quick only)");
    a.add_option("--gpt-text", s_.gpt_text, "the GPT part's UTF-8 text file (default: Debian's fortunes)")->check(non_empty());
    a.add_option("--gpt-norms", s_.gpt_norms, "norm variants of the GPT sweep: " + gpt_variants_text())
        ->delimiter(',')
        ->check(gpt_variant_check())
        ->capture_default_str();
    a.add_option("--gpt-batch-sizes", s_.gpt_batch_sizes, "batch sizes of the GPT sweep, in sequences")
        ->delimiter(',')
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--gpt-train-tokens", s_.gpt_tokens, "training tokens (characters) of every GPT run")
        ->check(whole(1, kMaxInt))
        ->capture_default_str();
    a.add_option("--gpt-layers", s_.gpt_layers, "the GPT's transformer blocks")->check(whole(1, 1024))->capture_default_str();
    a.add_option("--gpt-width", s_.gpt_width, "the GPT's embedding width")->check(whole(1, 1 << 20))->capture_default_str();
    a.add_option("--gpt-heads", s_.gpt_heads, "the GPT's attention heads (divide --gpt-width)")
        ->check(whole(1, 1 << 16))
        ->capture_default_str();
    a.add_option("--gpt-block-size", s_.gpt_block, "the GPT's context in characters")->check(whole(1, 1 << 16))->capture_default_str();
  }

  static std::string gpt_variants_text() {
    std::string names;
    for (const std::string& v : gpt_variant_names()) names += (names.empty() ? "" : ", ") + v;
    return names;
  }
  static CLI::Validator gpt_variant_check() {
    return CLI::Validator(
        [](std::string& v) {
          return is_gpt_variant(v) ? std::string() : "unknown GPT norm variant '" + v + "' (expected one of: " + gpt_variants_text() + ")";
        },
        "VARIANT");
  }

  // --quick's sweep, Fashion-MNIST's sizes (presets.h: preset_study).
  void own_presets(const Given& given) override { preset_study(s_, o_, given); }

  bool cnn_part() const { return !o_.quick && !s_.no_cnn && o_.data.name == "fashion-mnist"; }
  bool lstm_part() const { return !o_.quick && !s_.no_lstm && o_.data.name == "fashion-mnist"; }
  bool gpt_part() const { return !o_.quick && !s_.no_gpt && o_.data.name == "fashion-mnist"; }
  bool why_part() const { return !o_.quick && !s_.no_why && o_.data.name == "fashion-mnist"; }

  std::vector<DataSource> own_data_sources() const override {
    if (!gpt_part()) return {};
    return {text_source("--gpt-text", s_.gpt_text)};
  }

  std::vector<std::string> norms_run() const override {
    std::vector<std::string> all = s_.norms;
    if (cnn_part()) {
      all.insert(all.end(), s_.cnn_norms.begin(), s_.cnn_norms.end());
      all.insert(all.end(), s_.cnn_sweep_norms.begin(), s_.cnn_sweep_norms.end());
    }
    if (lstm_part()) all.insert(all.end(), s_.lstm_norms.begin(), s_.lstm_norms.end());
    if (why_part()) all.insert(all.end(), s_.why_norms.begin(), s_.why_norms.end());
    return all;
  }

  // The comparison (activation statistics about 50 times per run unless --stats-every), the sweep,
  // and on Fashion-MNIST without --quick the CNN, LSTM and GPT parts (their settings: presets.h,
  // the study family).
  void make_plan(const Splits& data) override {
    check_batches(data);
    const Given given(app_);
    StudyConfig st;
    st.compare = CompareConfig{.base = o_.train, .norms = s_.norms, .seeds = s_.seeds, .target_accuracy = s_.target};
    if (st.compare.base.stats_every == 0)
      st.compare.base.stats_every = std::max<int64_t>(1, steps_per_run(st.compare.base, data) / 50);
    st.sweep = SweepConfig{.base = o_.train, .over = SweepOver::Batch, .batch_sizes = s_.batch_sizes, .reference_batch = 128,
                           .norms = s_.norms, .seeds = s_.seeds};
    st.sweep.base.stats_every = 0;
    st.sweep_train_limit = s_.sweep_train_limit;
    st.cnn = cnn_part();
    if (st.cnn) {
      const TrainConfig base = study_cnn_base(o_.train, s_, given);
      st.cnn_train_limit = s_.cnn_train_limit;
      st.cnn_compare = CompareConfig{.base = study_cnn_compare(base, s_, data.train.size()), .norms = s_.cnn_norms,
                                     .seeds = s_.seeds, .target_accuracy = s_.target};
      st.cnn_sweep = SweepConfig{.base = study_cnn_sweep(base), .over = SweepOver::Batch, .batch_sizes = s_.cnn_batch_sizes,
                                 .reference_batch = 128, .norms = s_.cnn_sweep_norms, .seeds = s_.seeds};
    }
    st.lstm = lstm_part();
    if (st.lstm) {
      st.lstm_sweep = SweepConfig{.base = study_lstm_sweep(o_.train, s_, data.train.size(), given), .over = SweepOver::Batch,
                                  .batch_sizes = s_.lstm_batch_sizes, .reference_batch = 128, .norms = s_.lstm_norms,
                                  .seeds = s_.seeds, .lr_scaling = LrScaling::Sqrt};
      st.lstm_train_limit = s_.lstm_train_limit, st.lstm_test_limit = s_.lstm_test_limit;
      st.lstm_compare = CompareConfig{.base = study_lstm_compare(st.lstm_sweep, s_, data.train.size()),
                                      .norms = s_.lstm_norms, .seeds = s_.seeds, .target_accuracy = s_.target};
    }
    st.gpt = gpt_part();
    if (st.gpt) st.gpt_sweep = gpt_sweep_config();
    st.why = why_part();
    if (st.why) {
      st.why_compare = CompareConfig{.base = study_why_compare(o_.train, s_), .norms = s_.why_norms, .seeds = s_.seeds,
                                     .target_accuracy = s_.target};
      st.why_train_limit = s_.why_train_limit;
      if (st.lstm) st.lstm_compare.base.probe_every = s_.lstm_probe_every;  // the sequence family's probes
    }
    plan_ = plan_study(st, data);
  }

  // The GPT part: its corpus (a contiguous 90/10 split) and its runs (study_gpt_base).
  LmSweepConfig gpt_sweep_config() const {
    const double vf = kTextValFraction;
    auto corpus = std::make_shared<const data::TextCorpus>(
        s_.gpt_text.empty() ? data::load_default_corpus(s_.gpt_block, vf) : data::load_text_corpus(s_.gpt_text, s_.gpt_block, vf));
    if (s_.gpt_width % s_.gpt_heads != 0)
      throw Error("--gpt-heads " + std::to_string(s_.gpt_heads) + " must divide --gpt-width " + std::to_string(s_.gpt_width));
    LmTrainConfig base = study_gpt_base(s_);
    base.model.vocab_size = corpus->vocabulary.size();
    LmRunFlags flags;
    flags.width = "--gpt-width", flags.layers = "--gpt-layers", flags.heads = "--gpt-heads";
    flags.block = "--gpt-block-size", flags.batch = "--gpt-batch-sizes", flags.norms = "--gpt-norms";
    flags.tokens = "--gpt-train-tokens";
    return LmSweepConfig{base, corpus, s_.gpt_norms, s_.seeds, s_.gpt_batch_sizes, s_.gpt_tokens, flags};
  }

  // The batch sizes given against the training sets their parts train on, and against the norms
  // with batch statistics; --lstm-test-limit against the test set.
  void check_batches(const Splits& data) const {
    const Given given(app_);
    const int64_t n = data.train.size();
    const auto subset = [n](int64_t limit) { return limit > 0 ? std::min(limit, n) : n; };
    const std::string sweep = "the sweep's training set", cnn = "the CNN part's training set";
    if (given("--batch-sizes"))
      for (int64_t b : s_.batch_sizes) check_batch_fits("--batch-sizes", b, subset(s_.sweep_train_limit), sweep);
    check_batch_statistics("--batch-sizes", s_.batch_sizes, "--norms", s_.norms);
    if (cnn_part()) {
      if (given("--cnn-batch-size")) check_batch_fits("--cnn-batch-size", s_.cnn_batch_size, subset(s_.cnn_train_limit), cnn);
      if (given("--cnn-batch-sizes"))
        for (int64_t b : s_.cnn_batch_sizes) check_batch_fits("--cnn-batch-sizes", b, subset(s_.cnn_train_limit), cnn);
      check_batch_statistics("--cnn-batch-size", {s_.cnn_batch_size}, "--cnn-norms", s_.cnn_norms);
      check_batch_statistics("--cnn-batch-sizes", s_.cnn_batch_sizes, "--cnn-sweep-norms", s_.cnn_sweep_norms);
    }
    if (lstm_part()) {
      const std::string lstm = "the LSTM part's training set";
      if (given("--lstm-batch-size")) check_batch_fits("--lstm-batch-size", s_.lstm_batch_size, subset(s_.lstm_train_limit), lstm);
      if (given("--lstm-batch-sizes"))
        for (int64_t b : s_.lstm_batch_sizes) check_batch_fits("--lstm-batch-sizes", b, subset(s_.lstm_train_limit), lstm);
      check_batch_statistics("--lstm-batch-size", {s_.lstm_batch_size}, "--lstm-norms", s_.lstm_norms);
      check_batch_statistics("--lstm-batch-sizes", s_.lstm_batch_sizes, "--lstm-norms", s_.lstm_norms);
      const int64_t tests = data.test.size();
      if (given("--lstm-test-limit") && s_.lstm_test_limit > tests)
        throw UsageError("--lstm-test-limit " + std::to_string(s_.lstm_test_limit) + " is larger than the test set (" +
                         std::to_string(tests) + " samples): give --lstm-test-limit " + std::to_string(tests) +
                         " or less (0: all)");
    }
  }

  // A flag of a part that does not run: refused, saying why the part is left out.
  void check_own(const Given& given) override {
    struct Part {
      std::string name, no_flag;
      bool runs;
      std::vector<std::string> flags;
    };
    const std::vector<Part> parts = {
        {"CNN", "--no-cnn", cnn_part(),
         {"--cnn-train-limit", "--cnn-epochs", "--cnn-batch-size", "--cnn-batch-sizes", "--cnn-norms", "--cnn-sweep-norms"}},
        {"LSTM", "--no-lstm", lstm_part(),
         {"--lstm-train-limit", "--lstm-test-limit", "--lstm-epochs", "--lstm-lr", "--lstm-batch-sizes", "--lstm-batch-size",
          "--lstm-norms"}},
        {"GPT", "--no-gpt", gpt_part(),
         {"--gpt-text", "--gpt-norms", "--gpt-batch-sizes", "--gpt-train-tokens", "--gpt-layers", "--gpt-width", "--gpt-heads",
          "--gpt-block-size"}},
        {"Why", "--no-why", why_part(), {"--why-train-limit", "--why-epochs", "--why-lr", "--why-norms"}}};
    for (const Part& p : parts) {
      if (p.runs) continue;
      const std::string why = given(p.no_flag) ? p.no_flag + " leaves it out"
                              : o_.quick       ? "it runs on Fashion-MNIST without --quick"
                                               : "it runs on Fashion-MNIST only (" + dataset_phrase(o_, given) + ")";
      for (const std::string& flag : p.flags)
        if (given(flag)) throw UsageError(flag + " sets the study's " + p.name + " part, which does not run: " + why);
    }
  }

  Report run_plan(const Splits& data, const StudyContext& ctx) override {
    return run_study(*plan_, o_.data, data, ctx);
  }

 private:
  StudyOptions s_;  // the study's flags (presets.h)
  std::optional<StudyPlan> plan_;
};

}  // namespace

std::unique_ptr<Command> make_study_command() { return std::make_unique<StudyCommand>(); }

}  // namespace normlab::experiments::commands
