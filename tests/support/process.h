// Test helpers for running things and capturing what they print: the normlab command in this
// process, a shell command in a child process (exit status and standard output), and what this
// process writes to stdout or stderr while a function runs.
#pragma once
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "experiments/commands/cli.h"
#include "tests/support/files.h"

namespace normlab::test {

// Runs `normlab <args...>` in this process (experiments::run_cli, as main does) and returns its
// exit status (experiments::ExitStatus). Errors are thrown, not printed: experiments::UsageError
// for a usage error, normlab::Error for the others. Needs the experiments library.
inline int run_normlab(std::vector<std::string> args) {
  args.insert(args.begin(), "normlab");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return experiments::run_cli(static_cast<int>(argv.size()), argv.data());
}

// run_normlab with --quiet appended: no progress lines.
inline int run_normlab_quiet(std::vector<std::string> args) {
  args.push_back("--quiet");
  return run_normlab(std::move(args));
}

// What a shell command did: its exit status (128 + the signal's number if a signal ended it) and
// what it wrote to its standard output.
struct CommandResult {
  int status = -1;
  std::string output;
};

// Runs `command` with the shell (popen) and waits for it to end. Its standard error is not captured
// (end the command with " 2>&1" to have it in output too).
inline CommandResult run_command(const std::string& command) {
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) throw std::runtime_error("run_command: cannot start the shell for: " + command);
  CommandResult r;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.status = st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// What f() writes to this process's file descriptor fd (1: stdout, 2: stderr, both the C and the
// C++ streams), which goes to a temporary file meanwhile (not a terminal, as in CI) and is put
// back afterwards, also when f throws.
template <typename F>
std::string capture_output(int fd, F&& f) {
  TempDir dir;
  const std::string file = dir.file("captured.txt");
  std::fflush(nullptr);
  std::cout.flush();
  const int saved = ::dup(fd);
  const int to = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  BOOST_REQUIRE(saved >= 0 && to >= 0);
  ::dup2(to, fd);
  ::close(to);
  struct Restore {
    int fd, saved;
    ~Restore() {
      std::fflush(nullptr);
      std::cout.flush();
      ::dup2(saved, fd);
      ::close(saved);
    }
  };
  {
    Restore restore{fd, saved};
    f();
  }
  return read_file(file);
}

}  // namespace normlab::test
