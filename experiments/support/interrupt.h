// Ctrl-C (SIGINT) during a command: the first asks the training to stop at the next step boundary
// (the finished runs are then written, marked interrupted); a second one ends the process at once.
#pragma once
#include <cstdint>

namespace normlab::experiments {

// Installs the SIGINT handler (once per process).
void install_interrupt_handler();
// For a command run inside another program (the Python package): installs the SIGINT handler
// for the scope's lifetime and puts the program's own handler back at its end.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct Saved;
  Saved* saved_;
};
// True once an interruption was asked for.
bool interrupted();
// Forgets an interruption (before a new command in the same process, e.g. in tests).
void clear_interrupt();
// For tests: behave as if Ctrl-C came after `steps` more training steps (-1: never).
void interrupt_after_steps(int64_t steps);
// Called by the training loop after every step (counts down interrupt_after_steps).
void count_step();

}  // namespace normlab::experiments
