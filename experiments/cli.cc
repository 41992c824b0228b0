// The normlab command line: one CLI11 subcommand per entry of the command table (commands/), parsed,
// checked, planned and run.
#include "experiments/cli.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

#include "dist/dist.h"
#include "experiments/commands/command.h"
#include "experiments/git_commit.h"

namespace normlab::experiments {

namespace {

using commands::Command;
using commands::CommandEntry;
using commands::Given;
using commands::Invocation;
using commands::command_table;

// The command line: every command with its flags, the one the user chose, parsed and checked.
struct Parsed {
  CLI::App app{"normlab: train small models on a CPU and see how BatchNorm and LayerNorm behave", "normlab"};
  std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> commands;  // the table's, in its order
  Command* command = nullptr;  // the parsed one; nullptr after --help
  CLI::App* sub = nullptr;
  int help_status = 0;         // --help's exit status
};

// Parses argv and checks the chosen command's flags (presets, conflicts); throws UsageError.
void parse(Parsed& p, int argc, char** argv) {
  p.app.require_subcommand(1);
  p.app.option_defaults()->always_capture_default();
  p.app.set_version_flag("--version", std::string("normlab ") + NORMLAB_VERSION + " (commit " + git_commit() + ")",
                         "print the version and the git commit it was built from, and exit");
  for (const CommandEntry& e : command_table()) {
    CLI::App* sub = p.app.add_subcommand(e.name, e.help);
    std::unique_ptr<Command> c = e.make();
    c->add_flags(*sub);
    p.commands.emplace_back(sub, std::move(c));
  }
  try {
    p.app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    p.help_status = p.app.exit(e);
    return;
  } catch (const CLI::ParseError& e) {
    const auto parsed = p.app.get_subcommands();
    throw UsageError(std::string(e.what()) + " (see: normlab " + (parsed.empty() ? "" : parsed.front()->get_name() + " ") +
                     "--help)");
  }
  p.sub = p.app.get_subcommands().front();
  for (auto& [sub, c] : p.commands)
    if (sub == p.sub) p.command = c.get();
  try {
    p.command->check(Given(p.sub));
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

std::string check_command_line(int argc, char** argv) {
  Parsed p;
  parse(p, argc, argv);
  return p.sub ? p.sub->get_name() : "";
}

int run_cli(int argc, char** argv) {
  if (dist::launched()) dist::init();  // started by mpirun: join the job
  Parsed p;
  parse(p, argc, argv);
  if (!p.command) return p.help_status;
  if (dist::world_size() > 1 && !p.command->runs_under_mpirun())
    throw UsageError("started by mpirun with " + std::to_string(dist::world_size()) + " processes: normlab train "
                     "needs --distributed (one model over the processes); compare, sweep and study split their runs "
                     "over them; " + p.sub->get_name() + " runs in one process");
  const Invocation inv{.app = &p.app, .argc = argc, .argv = argv};
  p.command->plan(inv);
  return p.command->run(inv);
}

}  // namespace normlab::experiments
