// `normlab eval`: a saved model's loss, accuracy, per-class accuracy and confusion matrix; for a
// character language model (train --arch gpt --dataset text), its validation loss over a text;
// either way written into --out (metrics.csv, report.md, manifest.json).
#include <cstdio>
#include <limits>
#include <optional>

#include "autograd/parallel.h"
#include "experiments/commands/cli.h"
#include "experiments/commands/flags.h"
#include "experiments/commands/training.h"
#include "experiments/models/language_model.h"
#include "experiments/records/result_set.h"
#include "experiments/studies/eval.h"
#include "experiments/support/output.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace {

class EvalCommand : public Command {
 public:
  void add_flags(CLI::App& a) override {
    a.add_option("--checkpoint", opt_.checkpoint, "model.safetensors written by normlab train")->required()->check(non_empty());
    a.add_option("--csv", opt_.csv, "labelled CSV file (models trained on a CSV file; Fashion-MNIST models: "
                                    "the test set without it)")
        ->check(non_empty());
    add_csv_format_flags(a, opt_.csv_format);
    a.add_option("--data-dir", opt_.fashion_dir, "folder of the Fashion-MNIST files (*-ubyte.gz)")->check(non_empty());
    a.add_option("--eval-batch", opt_.eval_batch, "evaluation batch size")
        ->check(whole(1, std::numeric_limits<int32_t>::max()))
        ->capture_default_str();
    a.add_option("--text", text_, "language models: the UTF-8 text whose validation split to evaluate (default: "
                                  "the text the model trained on)")
        ->check(non_empty());
    add_output_flags(a, out_, quiet_, threads_);
  }

  void check(const Given& given) override {
    if (out_.empty()) out_ = "out/eval";
    opt_.csv_flags_typed = typed_csv_flags(given);
    eval_batch_given_ = given("--eval-batch");
    data_flags_given_.clear();
    for (const char* flag : {"--csv", "--data-dir"})
      if (given(flag)) data_flags_given_.push_back(flag);
    for (const std::string& flag : opt_.csv_flags_typed) data_flags_given_.push_back(flag);
  }

  // The checkpoint and the data, read once.
  void plan(const Invocation&) override {
    autograd::set_num_threads(threads_);
    if (is_language_model(opt_.checkpoint)) return plan_language_model();
    if (!text_.empty())
      throw UsageError("--text goes with a language model's checkpoint (train --arch gpt --dataset text); " +
                       opt_.checkpoint + " is not one");
    plan_ = plan_eval(opt_);
  }

  int run(const Invocation& inv) override {
    ResultSet set(out_);
    StudyContext ctx;
    ctx.out = set.dir();
    ctx.quiet = quiet_;
    ctx.command_line = inv.text();
    try {
      if (lm_) run_lm_eval(opt_.checkpoint, *lm_, lm_eval_, ctx);
      else run_eval(*plan_, ctx);
    } catch (const Error& e) {  // a file that cannot be written: named in --out, not the hidden folder
      throw Error(set.in_user_terms(e.what()));
    }
    set.commit();
    std::printf("normlab: results in %s (report.md)\n", out_.c_str());
    return kExitOk;
  }

 private:
  // A language model: its validation loss over --text (or the text it trained on), printed.
  void plan_language_model() {
    if (!data_flags_given_.empty())
      throw UsageError(data_flags_given_.front() + " reads a table of samples; " + opt_.checkpoint +
                       " is a character language model (give --text FILE, or nothing for the text it trained on)");
    try {
      lm_ = load_language_model(opt_.checkpoint);
      lm_eval_ = evaluate_language_model(*lm_, opt_.checkpoint, text_, eval_batch_given_ ? opt_.eval_batch : 0);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }

  std::string text_;
  bool eval_batch_given_ = false;
  std::vector<std::string> data_flags_given_;
  std::optional<LanguageModel> lm_;
  LmEvaluation lm_eval_;
  EvalOptions opt_;
  std::string out_;
  bool quiet_ = false;
  int threads_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::optional<EvalPlan> plan_;
};

}  // namespace

std::unique_ptr<Command> make_eval_command() { return std::make_unique<EvalCommand>(); }

}  // namespace normlab::experiments::commands
