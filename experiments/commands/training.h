// What the training commands (train, compare, sweep, study) share: the flags of the data set, the
// model, the optimizer, the schedule and the output folder; the order of their presets (presets.h:
// --quick, the data set's, a CSV file's, the arch's, the optimizer's); the checks of flags against each other; and the flow of a run:
// load the data once, plan every run against it, train in this process's share of an mpirun job,
// and write the results as one set into --out.
#pragma once
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "experiments/commands/command.h"
#include "experiments/commands/resume.h"
#include "experiments/commands/shared_flags.h"
#include "experiments/commands/training_options.h"
#include "experiments/models/archs.h"
#include "experiments/registry/datasets.h"
#include "experiments/studies/study.h"

namespace normlab::experiments::commands {

// How one training command's shared flags and flow differ from the others'.
struct TrainingTraits {
  std::string name;                               // "sweep": the subcommand, and out/<name> by default
  std::string batch_size_help = "training batch size";
  std::string lr_help = "peak learning rate";
  std::string val_fraction_default;               // its --val-fraction default in words ("": 0)
  std::string stats_every_note;                   // added to --stats-every's default text
  bool eval_every = false;                        // --eval-every (train, compare)
  bool stats_every = true;                        // --stats-every (the sweep records no activation statistics)
  bool single_run = false;                        // train: --norm, --resume [DIR], no report.md line
  bool one_arch = false;                          // study: runs its MLP and CNN parts itself (no --arch cnn)
  bool classification_only = false;               // sweep, study: accuracy against batch size
  std::string records = "records.json";           // where --resume finds the runs to keep
  bool fits_csv_files = false;                    // train, compare: defaults fitted to a CSV file (presets.h)
  bool clip_grad_norm = false;                    // compare, sweep: --clip-grad-norm and the arch's default
                                                  // optimizer and clipping (ArchEntry)
};

// A data set that a training command trains outside the flow of tables: --dataset text, the
// character language models (text_training.h, text_compare.h). Its presets come before the shared
// checks of data-set and optimizer flags, its check after them (the arch's flags are its own),
// then its plan and run instead of the flow's.
class TextFlow {
 public:
  virtual ~TextFlow() = default;
  virtual void presets(TrainingOptions& o, const Given& given) = 0;
  virtual void check(TrainingOptions& o, const Given& given) = 0;
  // Reads the corpus and checks the runs against it (normlab::Error names the flags).
  virtual void plan(const TrainingOptions& o) = 0;
  // Trains and writes the results into --out as one set; returns the exit status.
  virtual int run(const TrainingOptions& o, const nlohmann::json& settings, const Invocation& inv) = 0;
  // The text files it reads (after check), for the fingerprint --resume compares.
  virtual std::vector<DataSource> data_sources() const = 0;
};

class TrainingCommand : public Command {
 public:
  void add_flags(CLI::App& app) final;
  void check(const Given& given) final;
  void plan(const Invocation& inv) final;
  int run(const Invocation& inv) final;
  bool runs_under_mpirun() const override { return true; }

 protected:
  // text: how the command trains --dataset text (nullptr: it does not; a member of the command,
  // used only after the flags are parsed).
  explicit TrainingCommand(TrainingTraits traits, TextFlow* text = nullptr)
      : traits_(std::move(traits)), text_flow_(text) {}
  const std::string& name() const { return traits_.name; }

  // The command's own flags, added after the shared ones (before --out).
  virtual void add_own_flags(CLI::App& app) = 0;
  // The command's own presets (presets.h), before --quick's and the data set's (given: the flags typed).
  virtual void own_presets(const Given& given) {}
  // The command's own checks of flags against each other, after the shared ones.
  virtual void check_own(const Given& given) {}
  // The command's own defaults from the arch (ArchEntry), where not given: each one applied is
  // added to `chosen` as "--flag value" for the report's note (sweep: --lr-scaling).
  virtual void own_arch_defaults(const Given& given, const ArchEntry& arch, std::vector<std::string>& chosen) {}
  // The norms its runs use (the --groups check).
  virtual std::vector<std::string> norms_run() const = 0;
  // Every run of the command, validated against the data: the typed plan run_plan executes.
  virtual void make_plan(const Splits& data) = 0;
  // Runs the plan with its outputs in ctx.out; returns its report.
  virtual Report run_plan(const Splits& data, const StudyContext& ctx) = 0;
  // In a process of an mpirun job other than rank 0 (which writes the results): this rank's share.
  virtual void run_other_rank(const Splits& data, const StudyContext& ctx) { run_plan(data, ctx); }
  // The context's command-specific settings (train: checkpoints), once --out's result set exists.
  virtual void complete_context(StudyContext& ctx) {}
  // After the results replaced --out.
  virtual void after_commit(const StudyContext& ctx) {}
  // The checks that need the whole settings, last (compare, sweep, study: --resume needs results to continue).
  virtual void final_checks(const Given& given);
  // The data files the command reads besides the data set's (study: its GPT part's text).
  virtual std::vector<DataSource> own_data_sources() const { return {}; }
  // What to say when Ctrl-C stopped the command.
  virtual std::string interrupted_message(const Report& rep) const;
  // The command trains --dataset text, and that is the data set (TextFlow).
  bool on_text() const { return text_flow_ && o_.data.name == "text"; }

  TrainingOptions o_;
  const CLI::App* app_ = nullptr;

 private:
  void add_data_flags(CLI::App& a);
  void add_train_flags(CLI::App& a);
  void add_optimizer_flags(CLI::App& a);
  void add_output_flags(CLI::App& a);
  void check_optimizer(const Given& given) const;
  void apply_arch_defaults(const Given& given);
  void check_applicable(const Given& given) const;
  void check_architecture(const Given& given);
  std::vector<DataSource> data_sources() const;

  TrainingTraits traits_;
  TextFlow* text_flow_;
  Splits data_;

 protected:
  nlohmann::json settings_;                      // the command and the flags typed (StudyContext::settings)

 private:
  ResumeSources resume_;                         // --resume: the earlier results reused
};

// A batch size the user gave (flag: "--batch-size", "--batch-sizes") larger than the training set
// it trains on (rows samples; what: "the training set"): a usage error naming the flag, the batch
// and the size, for a batch cannot hold more samples than there are.
void check_batch_fits(const std::string& flag, int64_t batch, int64_t rows, const std::string& what = "the training set");

// A batch size of 1 (given by batch_flag) for a norm with batch statistics among `norms` (given by
// norms_flag): a usage error naming both flags, for BatchNorm cannot normalize one sample.
void check_batch_statistics(const std::string& batch_flag, const std::vector<int64_t>& batches,
                            const std::string& norms_flag, const std::vector<std::string>& norms);

// "the dataset is 'moons', the --quick default": what a message about a data-set flag says.
std::string dataset_phrase(const TrainingOptions& o, const Given& given);

// The exit status of a training command whose results are written: kExitInterrupted (after
// printing `message` to stderr), kExitDiverged (saying where the diverged weights are) or kExitOk.
int run_exit_status(bool interrupted, bool diverged, const std::string& message);

}  // namespace normlab::experiments::commands
