// `normlab predict`: a saved model's class probabilities for each row of a CSV file.
#include <optional>

#include "experiments/commands/cli.h"
#include "experiments/commands/flags.h"
#include "experiments/commands/training.h"
#include "experiments/models/language_model.h"
#include "experiments/studies/predict.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace {

class PredictCommand : public Command {
 public:
  void add_flags(CLI::App& a) override {
    a.add_option("--checkpoint", checkpoint_, "model.safetensors written by normlab train (trained with --csv)")
        ->required()
        ->check(non_empty());
    a.add_option("--csv", csv_, "CSV file with the model's feature columns (the label column optional)")
        ->required()
        ->check(non_empty());
    a.add_option("--out", out_, "output CSV file: line, predicted class, label, p_<class>")
        ->check(non_empty())
        ->default_str("out/predict/predictions.csv");
    a.add_flag("--quiet", quiet_, "print nothing");
    add_csv_format_flags(a, format_);
  }

  // The checkpoint and the CSV rows, read once.
  void check(const Given& given) override { typed_ = typed_csv_flags(given); }

  void plan(const Invocation&) override {
    if (is_language_model(checkpoint_))
      throw UsageError(checkpoint_ + " is a character language model, which predicts no classes of CSV rows: normlab "
                       "generate samples text from it, normlab eval measures its loss");
    plan_ = plan_predict(checkpoint_, csv_, format_, typed_);
  }

  int run(const Invocation&) override { return run_predict(*plan_, out_, quiet_); }

 private:
  std::string checkpoint_, csv_, out_ = "out/predict/predictions.csv";
  data::CsvOptions format_;
  std::vector<std::string> typed_;  // the format flags typed
  bool quiet_ = false;
  std::optional<PredictPlan> plan_;
};

}  // namespace

std::unique_ptr<Command> make_predict_command() { return std::make_unique<PredictCommand>(); }

}  // namespace normlab::experiments::commands
