// Progress on stderr: bar with ETA on a terminal, plain lines otherwise.
#include "experiments/support/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace normlab::experiments {

std::string format_duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  return buf;
}

Progress::Progress(int64_t total, bool quiet)
    : total_(std::max<int64_t>(total, 1)), quiet_(quiet), tty_(::isatty(2)),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() { finish(); }

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(int64_t done, const std::string& label) {
  if (quiet_ || !tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double frac = std::min(1.0, double(done) / double(total_));
  const double el = elapsed_seconds();
  const std::string eta = frac > 0 ? format_duration(el / frac - el) : "?";
  const int width = 30, filled = static_cast<int>(frac * width);
  std::fprintf(stderr, "\r\033[K[%s%s] %3.0f%% ETA %s  %s", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), 100 * frac, eta.c_str(), label.c_str());
  std::fflush(stderr);
  open_ = true;
}

void Progress::line(const std::string& text) {
  if (quiet_) return;
  if (tty_ && open_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", text.c_str());
  open_ = false;
}

void Progress::finish() {
  if (open_ && tty_) std::fprintf(stderr, "\r\033[K");
  open_ = false;
}

}  // namespace normlab::experiments
