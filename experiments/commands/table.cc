// The table of normlab's commands: main(), `normlab help` and --help read it.
#include "experiments/commands/command.h"

namespace normlab::experiments::commands {

namespace {

// One argument as a POSIX shell reads it back: as is when it holds only characters no shell
// treats specially, else in single quotes (a quote inside as '\'').
std::string shell_word(const std::string& s) {
  static const char* const kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+./,:=@%";
  if (!s.empty() && s.find_first_not_of(kPlain) == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string Invocation::text() const {
  std::string t;
  for (int i = 0; i < argc; ++i) t += (i ? " " : "") + (i == 0 ? std::string("normlab") : shell_word(argv[i]));
  return t;
}

const std::vector<CommandEntry>& command_table() {
  static const std::vector<CommandEntry> table{
      {"help", "print the help of normlab or of one subcommand (normlab help train)", make_help_command},
      {"demo", "train an MLP on XOR by hand and print the loss going down", make_demo_command},
      {"train", "train one model: metrics to the terminal and CSV, a checkpoint", make_train_command},
      {"compare", "convergence: the same model under each norm, several seeds", make_compare_command},
      {"sweep", "sensitivity: final accuracy against batch size or learning rate", make_sweep_command},
      {"study", "the default study (make run): MLP, CNN, LSTM and GPT, compare + batch-size sweeps, one report", make_study_command},
      {"predict", "a saved model's class probabilities for each row of a CSV file", make_predict_command},
      {"eval", "a saved model's accuracy, per-class accuracy and confusion matrix", make_eval_command},
      {"generate", "text sampled from a character language model (train --dataset text)",
       make_generate_command},
      {"completion", "a completion script for bash or zsh (source <(normlab completion bash))", make_completion_command},
  };
  return table;
}

}  // namespace normlab::experiments::commands
