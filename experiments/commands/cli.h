// The normlab command line (CLI11): subcommands help, demo, train, compare, sweep, study, eval and predict, and --version.
#pragma once
#include <string>

#include "experiments/support/errors.h"

namespace normlab::experiments {

// Parses argv and runs the chosen subcommand; returns the exit status (ExitStatus). Errors are
// thrown: UsageError for usage errors, normlab::Error for the others (main prints them as
// "normlab: error: ..." and exits with 2 or 1).
int run_cli(int argc, char** argv);

// Parses argv and checks the options as run_cli does, without reading data or writing anything;
// returns the subcommand's name ("" after --help, which is printed). Throws UsageError.
std::string check_command_line(int argc, char** argv);

}  // namespace normlab::experiments
