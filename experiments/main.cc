// The normlab command: train one model, compare norms, sweep batch sizes or learning rates, or run
// the default study (compare + batch-size sweep) that `make run` runs.
#include <cstdio>
#include <exception>

#include "dist/dist.h"
#include "experiments/commands/cli.h"

int main(int argc, char** argv) {
  namespace ex = normlab::experiments;
  try {
    return ex::run_cli(argc, argv);
  } catch (const ex::UsageError& e) {
    // In an mpirun job every rank parses the same command line: rank 0 alone says what is wrong.
    if (normlab::dist::job_rank() == 0) std::fprintf(stderr, "normlab: error: %s\n", ex::printable(e.what()).c_str());
    return ex::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normlab: error: %s\n", ex::printable(e.what()).c_str());
    return ex::kExitError;
  }
}
