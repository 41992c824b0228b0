// `normlab help [SUBCOMMAND]`: the help of normlab or of one subcommand.
#include <cstdio>

#include "experiments/commands/command.h"
#include "experiments/commands/entry_flags.h"  // or_list

namespace normlab::experiments::commands {

namespace {

class HelpCommand : public Command {
 public:
  void add_flags(CLI::App& a) override {
    std::vector<std::string> names;
    for (const CommandEntry& e : command_table()) names.push_back(e.name);
    a.add_option("subcommand", topic_, "the subcommand: " + or_list(names))->check(CLI::IsMember(names));
  }
  int run(const Invocation& inv) override {
    // The formatter directly: App::help() would print the help of the parsed subcommand, `help`.
    const auto format = inv.app->get_formatter();
    const std::string help =
        topic_.empty() ? format->make_help(inv.app, "normlab", CLI::AppFormatMode::Normal)
                       : format->make_help(inv.app->get_subcommand(topic_), "normlab " + topic_, CLI::AppFormatMode::Normal);
    std::printf("%s", help.c_str());
    return 0;
  }

 private:
  std::string topic_;
};

}  // namespace

std::unique_ptr<Command> make_help_command() { return std::make_unique<HelpCommand>(); }

}  // namespace normlab::experiments::commands
