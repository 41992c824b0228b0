// Progress on stderr: a bar with ETA when stderr is a terminal, plain lines otherwise, nothing
// with --quiet.
#pragma once
#include <chrono>
#include <string>

namespace normlab::experiments {

class Progress {
 public:
  // total: units of work (e.g. training steps over all runs); quiet silences everything.
  Progress(int64_t total, bool quiet);
  ~Progress();
  // Marks `done` units finished, with a short label for the current run.
  void update(int64_t done, const std::string& label);
  // A line of its own (kept above the bar on a terminal, printed as is otherwise).
  void line(const std::string& text);
  // Ends the bar (newline on a terminal).
  void finish();
  double elapsed_seconds() const;

 private:
  int64_t total_;
  bool quiet_, tty_, open_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

// "1m05s" / "12s".
std::string format_duration(double seconds);

}  // namespace normlab::experiments
