// The normlab command: `normlab demo` (more subcommands arrive with the experiments).
#include <cstdio>
#include <cstring>
#include <exception>

#include "autograd/error.h"
#include "experiments/demo.h"

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && std::strcmp(argv[1], "demo") == 0) return normlab::experiments::run_demo();
    std::fprintf(stderr, "usage: normlab demo\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normlab: error: %s\n", e.what());
    return 1;
  }
}
