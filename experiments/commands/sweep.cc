// `normlab sweep`: final accuracy against the batch size or the learning rate; with --distributed
// in an mpirun job, BatchNorm with each rank's statistics against SyncBatchNorm.
#include <limits>
#include <optional>

#include "dist/dist.h"
#include "experiments/commands/flags.h"
#include "experiments/commands/presets.h"
#include "experiments/commands/text_compare.h"
#include "experiments/commands/training.h"
#include "experiments/registry/layers.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace {

constexpr int64_t kMaxBatch = std::numeric_limits<int32_t>::max();

class SweepCommand : public TrainingCommand {
 public:
  SweepCommand()
      : TrainingCommand({.name = "sweep",
                         .batch_size_help = "training batch size (--over lr)",
                         .lr_help = "peak learning rate (--over batch: at --reference-batch)",
                         .stats_every = false,
                         .classification_only = true,
                         .clip_grad_norm = true},
                        &text_) {}

 protected:
  void add_own_flags(CLI::App& a) override {
    a.add_option_function<std::string>(
         "--over", [this](const std::string& v) { s_.over = v == "lr" ? SweepOver::LearningRate : SweepOver::Batch; },
         "what to sweep: batch or lr")
        ->check(CLI::IsMember({sweep_over_name(SweepOver::Batch), sweep_over_name(SweepOver::LearningRate)}))
        ->default_str("batch");
    preset_default(a.add_option("--batch-sizes", s_.batch_sizes, "batch sizes (--over batch)")
                       ->delimiter(',')
                       ->check(whole(1, kMaxBatch)),
                   sweep_help("--batch-sizes"));
    preset_default(a.add_option("--lrs", s_.lrs, "learning rates (--over lr)")->delimiter(',')->check(non_negative()),
                   sweep_help("--lrs"));
    a.add_option("--reference-batch", s_.reference_batch, "the batch at which the lr is --lr (--over batch)")
        ->check(whole(1, kMaxBatch));
    preset_default(a.add_option_function<std::string>(
                        "--lr-scaling", [this](const std::string& v) { s_.lr_scaling = lr_scaling_from(v); },
                        "--over batch: the lr at batch b, linear: --lr x b / --reference-batch (for SGD), sqrt: --lr "
                        "x sqrt(b / --reference-batch) (for Adam), none: --lr")
                       ->check(CLI::IsMember({"linear", "sqrt", "none"})),
                   sweep_help("--lr-scaling"));
    a.add_option("--norms", s_.norms,
                 "norms to compare: " + norm_names() + "; with --dataset text (--arch gpt): layer, layer-post, rms, "
                 "rms-post, batch (BatchNorm over the tokens), batch-post, none, noisybatch, noisybatch-post (-post: "
                 "post-norm, else pre-norm; default: layer,layer-post,rms,batch,none)")
        ->delimiter(',')
        ->check(norm_or_gpt_variant());
    preset_default(a.add_option("--seeds", s_.seeds, "seeds")->delimiter(',')->check(seed_value()),
                   sweep_help("--seeds"));
    a.add_flag("--distributed", o_.train.distributed,
               "in an mpirun job: BatchNorm with each rank's own statistics against SyncBatchNorm (and the "
               "other --norms) in data-parallel runs over --ranks processes at per-rank batches --batch-sizes, "
               "beside one process at the per-rank and the global batch (default --norms "
               "batch,syncbatch,layer,group, --batch-sizes 2,4,8)");
    a.add_option("--ranks", s_.ranks,
                 "--distributed: the numbers of processes a run trains over, each dividing the mpirun job's "
                 "(1: one process)")
        ->delimiter(',')
        ->check(whole(1, 1 << 20))
        ->default_str("every divisor of the job's size, e.g. 1,2,4 for mpirun -np 4");
    a.add_flag("--full", s_.full, "the complete protocol: all 60k images, 5 seeds, batch 2..256");
    text_.add_flags(a);
  }

  // --full's, --quick's and the local-vs-sync experiment's lists (presets.h: preset_sweep).
  void own_presets(const Given& given) override {
    preset_sweep(s_, o_, given, dist::launched() ? dist::job_size() : 0);
  }

  void check_own(const Given& given) override {
    refuse_gpt_variants(s_.norms, o_.data.name);
    if (o_.quick && s_.full) throw Error("--quick and --full cannot be used together");
    const std::string over = "--over " + sweep_over_name(s_.over) + (given("--over") ? "" : " (the default)");
    auto reject = [&](const char* flag, const std::string& why) {
      if (given(flag)) throw Error(std::string(flag) + " cannot be used with " + over + ": " + why);
    };
    if (s_.over == SweepOver::LearningRate) {
      reject("--batch-sizes", "it sets the batch sizes of --over batch (--batch-size sets the batch of every run)");
      reject("--reference-batch", "it scales the learning rate with the batch size of --over batch");
      reject("--lr-scaling", "it scales the learning rate with the batch size of --over batch");
    } else {
      reject("--lrs", "it sets the learning rates of --over lr (--lr sets the rate at --reference-batch)");
      reject("--batch-size", "every run trains at one of --batch-sizes");
    }
    if (s_.full && s_.over != SweepOver::Batch) throw Error("--full cannot be used with " + over + ": --full is the batch-size protocol");
    const bool distributed = o_.train.distributed;
    if (distributed && s_.over != SweepOver::Batch)
      throw Error("--distributed cannot be used with " + over + ": it sweeps the per-rank batch size");
    if (distributed && s_.full)
      throw Error("--full cannot be used with --distributed: --full is the one-process protocol (give --train-limit, "
                  "--epochs, --seeds and --batch-sizes for a larger local-vs-sync experiment)");
    if (distributed && given("--lr-scaling"))
      throw Error("--lr-scaling cannot be used with --distributed: the local-vs-sync experiment scales the lr "
                  "linearly with the global batch");
    if (!distributed && given("--ranks"))
      throw Error("--ranks goes with --distributed (the local-BatchNorm vs SyncBatchNorm experiment)");
    if (s_.full && o_.data.name != "fashion-mnist")
      throw Error("--full cannot be used with --dataset " + o_.data.name + ": --full is the Fashion-MNIST protocol "
                  "(all 60k training images)");
  }

  void own_arch_defaults(const Given& given, const ArchEntry& a, std::vector<std::string>& chosen) override {
    preset_sweep_arch(s_, o_, a, given, chosen);
  }

  std::vector<std::string> norms_run() const override { return on_text() ? std::vector<std::string>{} : s_.norms; }

  void make_plan(const Splits& data) override {
    if (Given(app_)("--batch-sizes"))
      for (int64_t b : s_.batch_sizes) check_batch_fits("--batch-sizes", b, data.train.size());
    if (s_.over == SweepOver::Batch && !o_.train.distributed) check_batch_statistics("--batch-sizes", s_.batch_sizes, "--norms", s_.norms);
    TrainConfig base = o_.train;
    base.stats_every = 0;  // the sweep records no activation statistics
    if (o_.train.distributed) {
      base.distributed = false;  // set per run (more than one rank)
      ddp_ = normalize(DdpSweepConfig{.base = base, .per_rank_batches = s_.batch_sizes, .ranks = s_.ranks,
                                      .reference_batch = s_.reference_batch, .norms = s_.norms, .seeds = s_.seeds});
      ddp_runs_ = ddp_sweep_runs(*ddp_, data);
    } else {
      sweep_ = SweepConfig{.base = base, .over = s_.over, .batch_sizes = s_.batch_sizes, .lrs = s_.lrs,
                           .reference_batch = s_.reference_batch, .norms = s_.norms, .seeds = s_.seeds,
                           .lr_scaling = s_.lr_scaling};
      runs_ = sweep_runs(*sweep_, data);
    }
  }

  Report run_plan(const Splits& data, const StudyContext& ctx) override {
    return ddp_ ? run_ddp_sweep(*ddp_, ddp_runs_, data, ctx) : run_sweep(*sweep_, runs_, data, ctx);
  }

 private:
  SweepOptions s_;  // the sweep's flags (presets.h)
  std::optional<SweepConfig> sweep_;
  std::vector<CheckedRun> runs_;
  std::optional<DdpSweepConfig> ddp_;
  std::vector<std::vector<CheckedRun>> ddp_runs_;
  // --dataset text: a character GPT under each norm at each batch size (text_compare.h).
  TextStudy text_{TextStudy::Kind::Sweep,
                  {.norms = &s_.norms, .seeds = &s_.seeds, .batch_sizes = &s_.batch_sizes, .over = &s_.over}};
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() { return std::make_unique<SweepCommand>(); }

}  // namespace normlab::experiments::commands
