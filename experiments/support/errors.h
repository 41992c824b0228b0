// The normlab command's errors as a user meets them: its exit statuses, the usage error (exit
// status 2) that names the flag, and messages made printable.
#pragma once
#include <string>

#include "base/error.h"

namespace normlab::experiments {

// The exit statuses of the normlab command.
enum ExitStatus : int {
  kExitOk = 0,           // done
  kExitError = 1,        // an error while running (a data file that cannot be read, a full disk, ...)
  kExitUsage = 2,        // a usage error: an unknown flag, a value out of range, settings that cannot train
  kExitDiverged = 3,     // `train`: the run diverged (its loss or test loss became NaN or infinite)
  kExitInterrupted = 130 // Ctrl-C (SIGINT): the finished runs were written, marked interrupted
};

// A usage error (exit status 2): the message names the flag, what it accepts and what was given.
struct UsageError : Error {
  using Error::Error;
};

// A message as it can be printed: control characters (but newline and tab) and bytes that are not
// part of valid UTF-8 (a corrupt file's 0xff) become \xHH; UTF-8 text, such as file names, stays.
std::string printable(const std::string& message);

}  // namespace normlab::experiments
