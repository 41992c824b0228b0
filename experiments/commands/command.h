// A subcommand of `normlab` as an object: the flags it adds to the command line, a plan made from
// them once (defaults applied, names looked up in the registries, every run checked against the
// data), and running that plan. The commands are registered in one table (command_table()), which
// main(), `normlab help` and --help read; adding a command is its file plus one entry there.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace normlab::experiments::commands {

// Which flags the user gave on the command line (as opposed to defaults and presets).
class Given {
 public:
  explicit Given(const CLI::App* app) : app_(app) {}
  bool operator()(const std::string& flag) const {
    const CLI::Option* o = app_->get_option_no_throw(flag);
    return o != nullptr && o->count() > 0;
  }

 private:
  const CLI::App* app_;
};

// The command line as typed, for the manifests and reports ("normlab train --quick").
struct Invocation {
  const CLI::App* app = nullptr;  // the whole command line's parser (help formats it)
  int argc = 0;
  char** argv = nullptr;
  std::string text() const;
};

class Command {
 public:
  virtual ~Command() = default;
  // Adds the command's flags to its subcommand; each writes into the command's own options.
  virtual void add_flags(CLI::App& app) = 0;
  // After parsing: applies the presets and defaults, and checks the flags against each other,
  // reading no file (normlab::Error, reported as a usage error).
  virtual void check(const Given& given) {}
  // Reads what the plan needs (the data set, a checkpoint) and makes the typed plan: every run
  // validated, so that run() checks and looks up nothing again (normlab::Error: a usage error).
  virtual void plan(const Invocation& inv) {}
  // Runs the plan; returns the exit status (ExitStatus in cli.h).
  virtual int run(const Invocation& inv) = 0;
  // Whether this command may run in each process of an mpirun job (it splits its work over them).
  virtual bool runs_under_mpirun() const { return false; }
};

struct CommandEntry {
  std::string name;  // "train"
  std::string help;  // one line for `normlab --help`
  std::function<std::unique_ptr<Command>()> make;
};

// Every command, in the order of `normlab --help`: help, demo, train, compare, sweep, study,
// predict, eval, generate, completion.
const std::vector<CommandEntry>& command_table();

// The factories of the built-in commands (commands/<name>.cc).
std::unique_ptr<Command> make_help_command();
std::unique_ptr<Command> make_demo_command();
std::unique_ptr<Command> make_train_command();
std::unique_ptr<Command> make_compare_command();
std::unique_ptr<Command> make_sweep_command();
std::unique_ptr<Command> make_study_command();
std::unique_ptr<Command> make_predict_command();
std::unique_ptr<Command> make_eval_command();
std::unique_ptr<Command> make_generate_command();
std::unique_ptr<Command> make_completion_command();

}  // namespace normlab::experiments::commands
