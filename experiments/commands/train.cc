// `normlab train`: one model, its metrics as CSV, plots, report, manifest and checkpoint.
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

#include "autograd/generator.h"
#include "dist/dist.h"
#include "experiments/commands/flags.h"
#include "experiments/commands/text_training.h"
#include "experiments/commands/training.h"
#include "experiments/models/language_model.h"
#include "experiments/registry/layers.h"
#include "experiments/run/checkpointing.h"
#include "nn/checkpoint.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace {

namespace fs = std::filesystem;

// The typed plan: the run, checked, and where it continues from (--resume).
struct TrainPlan {
  std::optional<CheckedRun> run;
  fs::path resume_checkpoint;  // "": start afresh
};

class TrainCommand : public TrainingCommand {
 public:
  TrainCommand()
      : TrainingCommand({.name = "train", .eval_every = true, .single_run = true, .fits_csv_files = true}, &text_) {}

 protected:
  void add_own_flags(CLI::App& a) override {
    a.add_option("--norm", norm_, "norm in the hidden layers: " + norm_names())->check(norm_name());
    a.add_option("--seed", seed_, "seed of the initialization and the batch order")->check(seed_value());
    a.add_flag("--distributed", o_.train.distributed,
               "data-parallel training over the processes of an mpirun job (mpirun -np 2 normlab train "
               "--distributed ...): --batch-size is the global batch, each rank trains on its slice, gradients "
               "are averaged over the ranks; rank 0 writes the results (--norm syncbatch: BatchNorm over the "
               "global batch)");
    a.add_option("--checkpoint-every", checkpoint_every_,
                 "write a checkpoint (model, optimizer, position in the data) to <out>/checkpoint after every N "
                 "epochs; one is also written when Ctrl-C stops the run")
        ->check(whole(1, std::numeric_limits<int64_t>::max()))
        ->default_str("");
    a.add_option("--resume", resume_dir_,
                 "continue a stopped run from its last checkpoint, with the same flags: the one in --out (or "
                 "the one a killed run left beside it), or the one in DIR; the results are those of a run "
                 "that never stopped")
        ->expected(0, 1)
        ->type_name("[DIR]")
        ->default_str("");
    a.add_option("--init-from", o_.train.init_from,
                 "start from the weights in this safetensors file (a model.safetensors of the same model)")
        ->check(CLI::ExistingFile)
        ->default_str("");
    text_.add_flags(a);
  }

  std::vector<std::string> norms_run() const override { return {norm_}; }

  // --resume [DIR]: the checkpoint to continue from, read once now (a damaged one is a usage error).
  void final_checks(const Given& given) override {
    if (!given("--resume")) return;
    const fs::path where = resume_dir_.empty() ? fs::path(o_.out) : fs::path(resume_dir_);
    const auto found = find_checkpoint(where);
    if (!found)
      throw Error("--resume: no checkpoint in " + where.string() + " (a train run writes one to <out>/checkpoint "
                  "with --checkpoint-every N, or when Ctrl-C stops it)");
    read_checkpoint(*found);
    o_.resume = true;
    plan_.resume_checkpoint = *found;
  }

  void make_plan(const Splits& data) override {
    TrainConfig c = o_.train;
    c.model.norm = norm_;
    c.seed = seed_;
    if (c.stats_every == 0) c.stats_every = std::max<int64_t>(1, steps_per_run(c, data) / 50);
    plan_.run = check_run(c, data);
    if (!c.init_from.empty()) {  // the weights must fit the model: checked before anything is written
      autograd::Generator gen(c.seed);
      const Model m = build_model(c.model, gen);
      try {
        if (is_language_model(c.init_from))
          throw Error(c.init_from + " is a character language model (train --dataset text); --init-from takes the "
                      "checkpoint of a classifier of the same model (--arch, --hidden or --model)");
        nn::load_module(c.init_from, *m.net);
      } catch (const Error& e) {
        throw Error(std::string("--init-from: ") + e.what());
      }
    }
  }

  Report run_plan(const Splits& data, const StudyContext& ctx) override { return run_train(*plan_.run, data, ctx); }

  // Data-parallel: the same training as rank 0, which alone writes the results.
  void run_other_rank(const Splits& data, const StudyContext&) override { train_run(*plan_.run, data); }

  void complete_context(StudyContext& ctx) override {
    ctx.checkpoint_every = checkpoint_every_;
    ctx.resume_checkpoint = plan_.resume_checkpoint;
  }

  // A killed run's partial folder that this one continued: its results are now in --out.
  void after_commit(const StudyContext& ctx) override {
    if (const fs::path from = ctx.resume_checkpoint.parent_path();
        !from.empty() && from.filename().string().find(".normlab-partial-") != std::string::npos) {
      std::error_code ec;
      fs::remove_all(from, ec);
    }
  }

  std::string interrupted_message(const Report&) const override {
    return "normlab: interrupted: the finished epochs and the model at the interruption are in " + o_.out +
           "; the same command with --resume continues the run\n";
  }

  bool runs_under_mpirun() const override { return o_.train.distributed; }

 private:
  std::string norm_ = "none";
  uint64_t seed_ = 0;
  int64_t checkpoint_every_ = 0;
  std::string resume_dir_;
  TrainPlan plan_;
  TextTraining text_{{.norm = &norm_, .seed = &seed_}};  // --dataset text: a character language model
};

}  // namespace

std::unique_ptr<Command> make_train_command() { return std::make_unique<TrainCommand>(); }

}  // namespace normlab::experiments::commands
