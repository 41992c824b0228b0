// The table of normlab's commands: main(), `normlab help` and --help read it.
#include "experiments/commands/command.h"

namespace normlab::experiments::commands {

std::string Invocation::text() const {
  std::string t;
  for (int i = 0; i < argc; ++i) t += (i ? " " : "") + std::string(i == 0 ? "normlab" : argv[i]);
  return t;
}

const std::vector<CommandEntry>& command_table() {
  static const std::vector<CommandEntry> table{
      {"help", "print the help of normlab or of one subcommand (normlab help train)", make_help_command},
      {"demo", "train an MLP on XOR by hand and print the loss going down", make_demo_command},
      {"train", "train one model: metrics to the terminal and CSV, a checkpoint", make_train_command},
      {"compare", "convergence: the same model under each norm, several seeds", make_compare_command},
      {"sweep", "sensitivity: final accuracy against batch size or learning rate", make_sweep_command},
      {"study", "the default study (make run): compare + batch-size sweep, one report", make_study_command},
      {"predict", "a saved model's class probabilities for each row of a CSV file", make_predict_command},
      {"eval", "a saved model's accuracy, per-class accuracy and confusion matrix", make_eval_command},
  };
  return table;
}

}  // namespace normlab::experiments::commands
