// `normlab eval`: a saved model's loss, accuracy, per-class accuracy and confusion matrix.
#include <cstdio>
#include <limits>
#include <optional>

#include "autograd/parallel.h"
#include "experiments/cli.h"
#include "experiments/commands/training.h"
#include "experiments/studies/eval.h"
#include "experiments/commands/flags.h"
#include "experiments/result_set.h"

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
    add_output_flags(a, out_, quiet_, threads_);
  }

  void check(const Given& given) override {
    if (out_.empty()) out_ = "out/eval";
    opt_.csv_flags_typed = typed_csv_flags(given);
  }

  // The checkpoint and the data, read once.
  void plan(const Invocation&) override {
    autograd::set_num_threads(threads_);
    plan_ = plan_eval(opt_);
  }

  int run(const Invocation& inv) override {
    ResultSet set(out_);
    StudyContext ctx;
    ctx.out = set.dir();
    ctx.quiet = quiet_;
    ctx.command_line = inv.text();
    try {
      run_eval(*plan_, ctx);
    } catch (const Error& e) {  // a file that cannot be written: named in --out, not the hidden folder
      throw Error(set.in_user_terms(e.what()));
    }
    set.commit();
    std::printf("normlab: results in %s (report.md)\n", out_.c_str());
    return kExitOk;
  }

 private:
  EvalOptions opt_;
  std::string out_;
  bool quiet_ = false;
  int threads_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::optional<EvalPlan> plan_;
};

}  // namespace

std::unique_ptr<Command> make_eval_command() { return std::make_unique<EvalCommand>(); }

}  // namespace normlab::experiments::commands
