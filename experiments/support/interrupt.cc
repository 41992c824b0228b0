// SIGINT: a flag that the training loop checks between steps; a second SIGINT exits at once.
#include "experiments/support/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace normlab::experiments {

namespace {

std::atomic<int> g_signals{0};            // SIGINTs received
std::atomic<int64_t> g_steps_left{-1};    // tests: steps until a simulated Ctrl-C

void on_sigint(int) {
  if (g_signals.fetch_add(1) >= 1) ::_exit(130);  // the second Ctrl-C: now, without cleaning up
  static const char msg[] =
      "\nnormlab: interrupted: finishing the current step, then writing the finished runs (Ctrl-C again to quit "
      "at once)\n";
  const ssize_t n = ::write(2, msg, sizeof msg - 1);
  (void)n;
}

// Installs on_sigint; the previous action into *old unless null.
void install(struct sigaction* old) {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, old);
}

}  // namespace

void install_interrupt_handler() {
  static const bool done = [] {
    install(nullptr);
    return true;
  }();
  (void)done;
}

struct InterruptScope::Saved {
  struct sigaction old {};
};

InterruptScope::InterruptScope() : saved_(new Saved) { install(&saved_->old); }

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &saved_->old, nullptr);
  delete saved_;
}

bool interrupted() { return g_signals.load(std::memory_order_relaxed) > 0; }

void clear_interrupt() {
  g_signals.store(0);
  g_steps_left.store(-1);
}

void interrupt_after_steps(int64_t steps) { g_steps_left.store(steps); }

void count_step() {
  if (g_steps_left.load(std::memory_order_relaxed) < 0) return;
  if (g_steps_left.fetch_sub(1) == 1) g_signals.fetch_add(1);
}

}  // namespace normlab::experiments
