// The normlab command line (CLI11): subcommands demo, train, compare, sweep and study.
#pragma once

namespace normlab::experiments {

// Parses argv and runs the chosen subcommand; returns the process exit code (0 on success, 1 on
// an error, printed as "normlab: error: ...", 2 on a usage error).
int run_cli(int argc, char** argv);

}  // namespace normlab::experiments
