// `normlab study` (make run): the comparison and the batch-size sweep of the MLP in one report;
// on Fashion-MNIST without --quick also the study's CNN (a comparison, a sweep), its LSTM (a
// sweep), a character GPT on a text corpus (a sweep) and a table of the families side by side.
#include <limits>
#include <memory>

#include "data/text.h"

#include "experiments/commands/flags.h"
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
                         .val_fraction_default = "0.1 on fashion-mnist without --quick, else 0",
                         .stats_every_note = "; the comparison only",
                         .one_arch = true,
                         .classification_only = true,
                         .records = "compare/records.json"}) {}

 protected:
  void add_own_flags(CLI::App& a) override {
    a.add_option("--norms", norms_, "norms to compare: " + norm_names())->delimiter(',')->check(norm_name());
    a.add_option("--seeds", seeds_, "seeds")->delimiter(',')->check(seed_value());
    preset_default(a.add_option("--batch-sizes", batch_sizes_, "batch sizes of the sweep")
                       ->delimiter(',')
                       ->check(whole(1, kMaxBatch)),
                   "2,8,32,128 with --quick, 2,4,8,32,128,256 on fashion-mnist, else 2,4,8,16,32,64,128,256");
    a.add_option("--target", target_, "target accuracy of the comparison")->check(real(0, 1));
    preset_default(a.add_option("--sweep-train-limit", sweep_train_limit_,
                                "the sweep trains on a random subset of N training samples (0: all)")
                       ->check(whole(0, kMaxInt)),
                   "10000 on fashion-mnist without --quick, else 0");
    add_cnn_part_flags(a);
    add_sequence_part_flags(a);
  }

  // The study's CNN part (Fashion-MNIST without --quick).
  void add_cnn_part_flags(CLI::App& a) {
    a.add_flag("--no-cnn", no_cnn_, "leave out the CNN part (Fashion-MNIST without --quick only)");
    a.add_option("--cnn-train-limit", cnn_train_limit_, "the CNN part trains on a random subset of N training images")
        ->check(whole(1, kMaxInt))
        ->capture_default_str();
    a.add_option("--cnn-epochs", cnn_epochs_, "epochs of the CNN comparison (its sweep: 1)")
        ->check(whole(1, 1000))
        ->capture_default_str();
    a.add_option("--cnn-batch-size", cnn_batch_size_,
                 "batch size of the CNN comparison (its lr: --lr x batch / 128, as in the sweeps)")
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--cnn-batch-sizes", cnn_batch_sizes_, "batch sizes of the CNN sweep")
        ->delimiter(',')
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--cnn-norms", cnn_norms_, "norms of the CNN comparison")
        ->delimiter(',')
        ->check(norm_name())
        ->capture_default_str();
    a.add_option("--cnn-sweep-norms", cnn_sweep_norms_, "norms of the CNN sweep")
        ->delimiter(',')
        ->check(norm_name())
        ->capture_default_str();
  }

  // The study's LSTM and GPT parts (Fashion-MNIST without --quick only).
  void add_sequence_part_flags(CLI::App& a) {
    a.add_flag("--no-lstm", no_lstm_, "leave out the LSTM part (Fashion-MNIST without --quick only)");
    a.add_option("--lstm-train-limit", lstm_train_limit_, "the LSTM part trains on a random subset of N training images")
        ->check(whole(1, kMaxInt))
        ->capture_default_str();
    a.add_option("--lstm-test-limit", lstm_test_limit_, "the LSTM part scores on the first N test images (0: all)")
        ->check(whole(0, kMaxInt))
        ->capture_default_str();
    a.add_option("--lstm-epochs", lstm_epochs_, "epochs of the LSTM sweep")->check(whole(1, 1000))->capture_default_str();
    a.add_option("--lstm-lr", lstm_lr_, "the LSTM's Adam learning rate at batch 128 (at batch b: x sqrt(b / 128))")
        ->check(real(1e-12, 1e6))
        ->capture_default_str();
    a.add_option("--lstm-batch-sizes", lstm_batch_sizes_, "batch sizes of the LSTM sweep")
        ->delimiter(',')
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--lstm-batch-size", lstm_batch_size_,
                 "batch size of the LSTM comparison (loss curves, the gradient reaching each time step)")
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--lstm-norms", lstm_norms_, "norms of the LSTM comparison and sweep")->delimiter(',')->check(norm_name())->capture_default_str();
    a.add_flag("--no-gpt", no_gpt_, "leave out the character GPT part (Fashion-MNIST without --quick only)");
    a.add_option("--gpt-text", gpt_text_, "the GPT part's UTF-8 text file (default: Debian's fortunes)")->check(non_empty());
    a.add_option("--gpt-norms", gpt_norms_, "norm variants of the GPT sweep: " + gpt_variants_text())
        ->delimiter(',')
        ->check(gpt_variant_check())
        ->capture_default_str();
    a.add_option("--gpt-batch-sizes", gpt_batch_sizes_, "batch sizes of the GPT sweep, in sequences")
        ->delimiter(',')
        ->check(whole(1, kMaxBatch))
        ->capture_default_str();
    a.add_option("--gpt-train-tokens", gpt_tokens_, "training tokens (characters) of every GPT run")
        ->check(whole(1, kMaxInt))
        ->capture_default_str();
    a.add_option("--gpt-layers", gpt_layers_, "the GPT's transformer blocks")->check(whole(1, 1024))->capture_default_str();
    a.add_option("--gpt-width", gpt_width_, "the GPT's embedding width")->check(whole(1, 1 << 20))->capture_default_str();
    a.add_option("--gpt-heads", gpt_heads_, "the GPT's attention heads (divide --gpt-width)")
        ->check(whole(1, 1 << 16))
        ->capture_default_str();
    a.add_option("--gpt-block-size", gpt_block_, "the GPT's context in characters")->check(whole(1, 1 << 16))->capture_default_str();
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

  // --quick's sweep; on Fashion-MNIST the study (make run) is sized to a few minutes on 2 cores
  // with 3 seeds everywhere: 5 epochs, the sweep on a random 10000 training images at batch 2, 4,
  // 8, 32, 128 and 256 (the batch-size protocol without batch 16 and 64: precise BN recomputes
  // the statistics over 10000 images), a validation split of 10%.
  void own_presets(const Given& given) override {
    warmup_given_ = given("--warmup");
    if (o_.quick) {
      if (!given("--batch-sizes")) batch_sizes_ = kQuickSweepBatches;
      if (!given("--target")) target_ = 0.85;
    } else if (o_.data.name == "fashion-mnist") {
      if (!given("--val-fraction")) o_.data.validation_fraction = 0.1;
      if (!given("--sweep-train-limit")) sweep_train_limit_ = 10000;
      if (!given("--batch-sizes")) batch_sizes_ = kStudySweepBatches;
    }
  }

  bool cnn_part() const { return !o_.quick && !no_cnn_ && o_.data.name == "fashion-mnist"; }
  bool lstm_part() const { return !o_.quick && !no_lstm_ && o_.data.name == "fashion-mnist"; }
  bool gpt_part() const { return !o_.quick && !no_gpt_ && o_.data.name == "fashion-mnist"; }

  std::vector<std::string> norms_run() const override {
    std::vector<std::string> all = norms_;
    if (cnn_part()) {
      all.insert(all.end(), cnn_norms_.begin(), cnn_norms_.end());
      all.insert(all.end(), cnn_sweep_norms_.begin(), cnn_sweep_norms_.end());
    }
    if (lstm_part()) all.insert(all.end(), lstm_norms_.begin(), lstm_norms_.end());
    return all;
  }

  // The comparison (activation statistics about 50 times per run unless --stats-every), the sweep,
  // and the CNN part: its comparison (--cnn-norms, --seeds, --cnn-epochs, --cnn-batch-size with lr
  // = --lr x batch / 128: 156 steps per epoch at 32, where 128 gave 39, too few to tell the norms
  // apart) and a batch-size sweep of 1 epoch (--cnn-sweep-norms, --cnn-batch-sizes, --seeds; lr =
  // --lr x batch / 128, BatchNorm evaluated three ways) on a random --cnn-train-limit images. The
  // CNN part has no warmup unless --warmup is given: its runs are short (39 steps at batch 128).
  void make_plan(const Splits& data) override {
    check_batches(data.train.size());
    StudyConfig st;
    st.compare = CompareConfig{.base = o_.train, .norms = norms_, .seeds = seeds_, .target_accuracy = target_};
    if (st.compare.base.stats_every == 0)
      st.compare.base.stats_every = std::max<int64_t>(1, steps_per_run(st.compare.base, data) / 50);
    st.sweep = SweepConfig{.base = o_.train, .over = SweepOver::Batch, .batch_sizes = batch_sizes_, .reference_batch = 128,
                           .norms = norms_, .seeds = seeds_};
    st.sweep.base.stats_every = 0;
    st.sweep_train_limit = sweep_train_limit_;
    st.cnn = cnn_part();
    if (st.cnn) {
      TrainConfig base = o_.train;
      base.model.arch = "cnn", base.model.image = {1, 28, 28}, base.model.layers = kDefaultCnn;
      if (!o_.eval_batch_given) base.eval_batch = kCnnEvalBatch;
      base.epochs = cnn_epochs_;
      if (!warmup_given_) base.warmup_steps = 0;
      st.cnn_train_limit = cnn_train_limit_;
      TrainConfig cmp = base;
      cmp.batch_size = cnn_batch_size_;
      cmp.lr = o_.train.lr * static_cast<double>(cnn_batch_size_) / 128.0;
      st.cnn_compare = CompareConfig{.base = cmp, .norms = cnn_norms_, .seeds = seeds_, .target_accuracy = target_};
      if (cmp.stats_every == 0)
        st.cnn_compare.base.stats_every =
            std::max<int64_t>(1, steps_per_run(cmp, std::min(cnn_train_limit_, data.train.size())) / 50);
      base.epochs = 1, base.stats_every = 0;
      st.cnn_sweep = SweepConfig{.base = base, .over = SweepOver::Batch, .batch_sizes = cnn_batch_sizes_, .reference_batch = 128,
                                 .norms = cnn_sweep_norms_, .seeds = seeds_};
    }
    st.lstm = lstm_part();
    if (st.lstm) {
      st.lstm_sweep = lstm_sweep_config(data.train.size()), st.lstm_train_limit = lstm_train_limit_;
      st.lstm_test_limit = lstm_test_limit_;
      st.lstm_compare = lstm_compare_config(st.lstm_sweep, data.train.size());
    }
    st.gpt = gpt_part();
    if (st.gpt) st.gpt_sweep = gpt_sweep_config();
    plan_ = plan_study(st, data);
  }

  // The LSTM part's sweep: the study's LSTM (the arch's default width) on rows of pixels, Adam with
  // the gradient norm clipped to 1 and lr = --lstm-lr x sqrt(b / 128), --lstm-epochs, --seeds. Its
  // warmup (unless --warmup) covers a tenth of the samples the runs see, at every batch size.
  SweepConfig lstm_sweep_config(int64_t train_size) const {
    TrainConfig base = o_.train;
    const ArchEntry& a = arch("lstm");
    base.model.arch = "lstm", base.model.image = {1, 28, 28}, base.model.hidden = a.default_hidden;
    base.optimizer = a.default_optimizer, base.lr = lstm_lr_, base.weight_decay = 0, base.momentum = 0;
    base.beta1 = 0.9, base.beta2 = 0.999, base.eps = 1e-8;
    base.clip_grad_norm = a.default_clip_grad_norm;
    base.epochs = lstm_epochs_, base.stats_every = 0;
    if (!warmup_given_) {
      const double samples = double(std::min(lstm_train_limit_, train_size)) * double(lstm_epochs_);
      base.warmup_steps = std::max<int64_t>(1, std::llround(0.1 * samples / 128.0));  // at batch 128
    }
    return SweepConfig{.base = base, .over = SweepOver::Batch, .batch_sizes = lstm_batch_sizes_, .reference_batch = 128,
                       .norms = lstm_norms_, .seeds = seeds_, .lr_scaling = LrScaling::Sqrt};
  }

  // The LSTM part's comparison: the sweep's settings at --lstm-batch-size (its lr and warmup
  // scaled as the sweep's), the gradient reaching each time step and the activations recorded about
  // 25 times per run.
  CompareConfig lstm_compare_config(const SweepConfig& sweep, int64_t train_size) const {
    TrainConfig base = sweep.base;
    base.batch_size = lstm_batch_size_;
    base.lr = scaled_lr(sweep, lstm_batch_size_), base.warmup_steps = scaled_warmup(sweep, lstm_batch_size_);
    base.stats_every = std::max<int64_t>(1, steps_per_run(base, std::min(lstm_train_limit_, train_size)) / 25);
    return CompareConfig{.base = base, .norms = lstm_norms_, .seeds = seeds_, .target_accuracy = target_};
  }

  // The GPT part: train --dataset text's settings (AdamW, lr 0.001, betas (0.9, 0.95), weight
  // decay 0.1 on 2-D weights, cosine decay after a warmup of a tenth of the steps, the gradient
  // norm clipped to 1, a contiguous 90/10 split) with the --gpt-* sizes.
  LmSweepConfig gpt_sweep_config() const {
    auto corpus = std::make_shared<const data::TextCorpus>(
        gpt_text_.empty() ? data::load_default_corpus(gpt_block_, 0.1) : data::load_text_corpus(gpt_text_, gpt_block_, 0.1));
    if (gpt_width_ % gpt_heads_ != 0)
      throw Error("--gpt-heads " + std::to_string(gpt_heads_) + " must divide --gpt-width " + std::to_string(gpt_width_));
    LmTrainConfig base;
    base.model.arch = "gpt", base.model.block_size = gpt_block_, base.model.vocab_size = corpus->vocabulary.size();
    base.model.gpt.n_layer = gpt_layers_, base.model.gpt.n_head = gpt_heads_, base.model.gpt.width = gpt_width_;
    base.train.optimizer = "adamw", base.train.lr = 1e-3, base.train.beta2 = 0.95, base.train.weight_decay = 0.1;
    base.train.schedule = "cosine";
    base.clip_grad_norm = 1.0;
    return LmSweepConfig{base, corpus, gpt_norms_, seeds_, gpt_batch_sizes_, gpt_tokens_};
  }

  // The batch sizes given against the training sets their parts train on.
  void check_batches(int64_t n) const {
    const Given given(app_);
    const auto subset = [n](int64_t limit) { return limit > 0 ? std::min(limit, n) : n; };
    const std::string sweep = "the sweep's training set", cnn = "the CNN part's training set";
    if (given("--batch-sizes"))
      for (int64_t b : batch_sizes_) check_batch_fits("--batch-sizes", b, subset(sweep_train_limit_), sweep);
    if (!cnn_part()) return;
    if (given("--cnn-batch-size")) check_batch_fits("--cnn-batch-size", cnn_batch_size_, subset(cnn_train_limit_), cnn);
    if (given("--cnn-batch-sizes"))
      for (int64_t b : cnn_batch_sizes_) check_batch_fits("--cnn-batch-sizes", b, subset(cnn_train_limit_), cnn);
  }

  Report run_plan(const Splits& data, const StudyContext& ctx) override {
    return run_study(*plan_, o_.data, data, ctx);
  }

 private:
  std::vector<std::string> norms_{"none", "batch", "layer"};
  std::vector<uint64_t> seeds_{0, 1, 2};
  std::vector<int64_t> batch_sizes_ = kSweepBatches;
  double target_ = 0.85;
  int64_t sweep_train_limit_ = 0;
  bool no_cnn_ = false, warmup_given_ = false;
  int64_t cnn_train_limit_ = 5000, cnn_epochs_ = 1, cnn_batch_size_ = 32;
  std::vector<int64_t> cnn_batch_sizes_{2, 8, 64};
  std::vector<std::string> cnn_norms_{"none", "batch", "layer", "group", "instance"};
  std::vector<std::string> cnn_sweep_norms_{"batch", "layer", "group"};
  bool no_lstm_ = false, no_gpt_ = false;
  int64_t lstm_train_limit_ = 4000, lstm_test_limit_ = 5000, lstm_epochs_ = 1, lstm_batch_size_ = 32;
  double lstm_lr_ = 1e-3;
  std::vector<int64_t> lstm_batch_sizes_{4, 32};
  std::vector<std::string> lstm_norms_{"none", "layer", "batch", "batch-shared"};
  std::string gpt_text_;
  std::vector<std::string> gpt_norms_{"layer", "batch", "none"};
  std::vector<int64_t> gpt_batch_sizes_{2, 16};
  int64_t gpt_tokens_ = 160000, gpt_layers_ = 2, gpt_width_ = 64, gpt_heads_ = 4, gpt_block_ = 64;
  std::optional<StudyPlan> plan_;
};

}  // namespace

std::unique_ptr<Command> make_study_command() { return std::make_unique<StudyCommand>(); }

}  // namespace normlab::experiments::commands
