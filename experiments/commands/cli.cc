// The normlab command line: one CLI11 subcommand per entry of the command table (commands/), parsed,
// checked, planned and run.
#include "experiments/commands/cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dist/dist.h"
#include "experiments/commands/command.h"
#include "experiments/support/git_commit.h"

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

// Levenshtein distance between a and b (insertions, deletions and substitutions of one character).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// A first word that is neither a flag nor a command: a usage error naming it and the nearest
// command (at most 2 edits away), e.g. "unknown subcommand 'trian': did you mean 'train'?".
void check_subcommand_word(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0') return;
  const std::string word = argv[1];
  std::string names, nearest;
  size_t best = 3;
  for (const CommandEntry& e : command_table()) {
    if (e.name == word) return;
    names += (names.empty() ? "" : ", ") + e.name;
    if (word.size() > 64) continue;  // not a mistyped command: no suggestion
    if (const size_t d = edit_distance(word, e.name); d < best) best = d, nearest = e.name;
  }
  throw UsageError("unknown subcommand '" + word + "'" + (nearest.empty() ? "" : ": did you mean '" + nearest + "'?") +
                   " (the subcommands: " + names + "; see: normlab --help)");
}

// A list flag's value with an empty item ("--hidden 16,", "--lrs 0.1,,1"), which CLI11 would drop
// silently: a usage error naming the flag, the value and the item's position.
void check_list_items(const CLI::App& sub, int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return;
    if (arg.rfind("--", 0) != 0) continue;
    const size_t eq = arg.find('=');
    const std::string flag = arg.substr(0, eq);
    const CLI::Option* o = sub.get_option_no_throw(flag);
    if (o == nullptr || o->get_delimiter() == '\0' || (eq == std::string::npos && i + 1 >= argc)) continue;
    const std::string value = eq == std::string::npos ? argv[i + 1] : arg.substr(eq + 1);
    const char sep = o->get_delimiter();
    if (value.find(sep) == std::string::npos) continue;
    std::vector<std::string> items{""};
    for (char c : value)
      if (c == sep) items.emplace_back();
      else items.back() += c;
    for (size_t k = 0; k < items.size(); ++k)
      if (items[k].empty())
        throw UsageError(flag + " '" + value + "': item " + std::to_string(k + 1) + " of " + std::to_string(items.size()) +
                         " is empty (a list is values separated by '" + std::string(1, sep) +
                         "', with nothing before the first, after the last or between two)");
  }
}

// Parses argv and checks the chosen command's flags (presets, conflicts); throws UsageError.
void parse(Parsed& p, int argc, char** argv) {
  check_subcommand_word(argc, argv);
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
  check_list_items(*p.sub, argc, argv);
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
