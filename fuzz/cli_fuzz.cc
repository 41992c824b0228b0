// Fuzzes the command-line parser: the input, split at NUL or newline bytes into at most 24
// arguments, is parsed and checked as `normlab` would (nothing runs, nothing is written); it must
// be accepted or refused with a usage error, never crash or throw anything else.
#include <string>
#include <vector>

#include "experiments/commands/cli.h"

using namespace normlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"normlab"};
  std::string cur;
  for (size_t i = 0; i < size && args.size() < 24; ++i) {
    if (data[i] == 0 || data[i] == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty() && args.size() < 24) args.push_back(cur);
  for (const auto& a : args)
    if (a.find("help") != std::string::npos || a == "-h") return 0;  // --help prints; nothing to check
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    experiments::check_command_line(static_cast<int>(argv.size()), argv.data());
  } catch (const Error&) {
  }
  return 0;
}
