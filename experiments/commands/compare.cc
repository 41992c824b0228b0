// `normlab compare`: convergence of the same model under each norm, over several seeds.
#include <limits>

#include "experiments/commands/flags.h"
#include "experiments/commands/text_compare.h"
#include "experiments/commands/training.h"
#include "experiments/registry/layers.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace {

class CompareCommand : public TrainingCommand {
 public:
  CompareCommand()
      : TrainingCommand({.name = "compare", .eval_every = true, .fits_csv_files = true, .clip_grad_norm = true}, &text_) {
  }

 protected:
  void add_own_flags(CLI::App& a) override {
    a.add_option("--norms", cfg_.norms,
                 "norms to compare: " + norm_names() + "; with --dataset text (--arch gpt): " +
                     "layer, layer-post, rms, rms-post, batch (BatchNorm over the tokens), batch-post, none, noisybatch, "
                     "noisybatch-post (-post: post-norm, else pre-norm; default: layer,layer-post,rms,batch,none)")
        ->delimiter(',')
        ->check(norm_or_gpt_variant());
    a.add_option("--seeds", cfg_.seeds, "seeds")->delimiter(',')->check(seed_value());
    a.add_option("--target", cfg_.target_accuracy, "target accuracy for steps/epochs-to-target")->check(real(0, 1));
    text_.add_flags(a);
  }

  void check_own(const Given&) override { refuse_gpt_variants(cfg_.norms, o_.data.name); }

  std::vector<std::string> norms_run() const override { return on_text() ? std::vector<std::string>{} : cfg_.norms; }

  void make_plan(const Splits& data) override {
    cfg_.base = o_.train;
    if (cfg_.base.stats_every == 0)  // activation statistics about 50 times per run
      cfg_.base.stats_every = std::max<int64_t>(1, steps_per_run(cfg_.base, data) / 50);
    runs_ = compare_runs(cfg_, data);
  }

  Report run_plan(const Splits& data, const StudyContext& ctx) override { return run_compare(cfg_, runs_, data, ctx); }

 private:
  CompareConfig cfg_;
  std::vector<CheckedRun> runs_;
  // --dataset text: a character GPT under each norm (text_compare.h).
  TextStudy text_{TextStudy::Kind::Compare, {.norms = &cfg_.norms, .seeds = &cfg_.seeds}};
};

}  // namespace

std::unique_ptr<Command> make_compare_command() { return std::make_unique<CompareCommand>(); }

}  // namespace normlab::experiments::commands
