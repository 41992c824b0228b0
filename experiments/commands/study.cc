// `normlab study` (make run): the comparison and the batch-size sweep of the MLP in one report;
// on Fashion-MNIST without --quick also the study's CNN (a comparison, a sweep) and a table of
// the two side by side.
#include <limits>

#include "experiments/commands/training.h"
#include "experiments/commands/flags.h"
#include "experiments/registry.h"

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

  std::vector<std::string> norms_run() const override {
    std::vector<std::string> all = norms_;
    if (cnn_part()) {
      all.insert(all.end(), cnn_norms_.begin(), cnn_norms_.end());
      all.insert(all.end(), cnn_sweep_norms_.begin(), cnn_sweep_norms_.end());
    }
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
    plan_ = plan_study(st, data);
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
  std::optional<StudyPlan> plan_;
};

}  // namespace

std::unique_ptr<Command> make_study_command() { return std::make_unique<StudyCommand>(); }

}  // namespace normlab::experiments::commands
