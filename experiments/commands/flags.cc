// Checks of command-line values as typed.
#include "experiments/commands/flags.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "experiments/registry/layers.h"
#include "experiments/support/output.h"

namespace normlab::experiments::commands {

namespace {

template <typename T>
bool parse_whole(const std::string& s, T& v) {
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && p == end;
}

std::string range_text(double lo, double hi, bool lo_open, bool hi_open) {
  if (hi == std::numeric_limits<double>::infinity()) return std::string(lo_open ? "above " : "of at least ") + fmt(lo);
  return std::string("in ") + (lo_open ? "(" : "[") + fmt(lo) + ", " + fmt(hi) + (hi_open ? ")" : "]");
}

}  // namespace

CLI::Validator whole(int64_t lo, int64_t hi) {
  const std::string want = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, want](std::string& s) -> std::string {
        int64_t v = 0;
        if (!parse_whole(s, v) || v < lo || v > hi) return "expected " + want + ", got '" + s + "'";
        return "";
      },
      "");  // no description: --help keeps its one-line layout; the message states the range
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        if (!parse_whole(s, v)) return "expected a whole number from 0 to 18446744073709551615, got '" + s + "'";
        return "";
      },
      "");
}

CLI::Validator real(double lo, double hi, bool lo_open, bool hi_open) {
  const std::string range = range_text(lo, hi, lo_open, hi_open);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        double v = NAN;
        const char* end = s.data() + s.size();
        const auto [p, ec] = std::from_chars(s.data(), end, v);
        const bool ok = ec == std::errc() && p == end && std::isfinite(v) && (lo_open ? v > lo : v >= lo) &&
                        (hi_open ? v < hi : v <= hi);
        return ok ? "" : "expected a finite number " + range + ", got '" + s + "'";
      },
      "");
}

CLI::Validator non_negative() { return real(0, std::numeric_limits<double>::infinity()); }

CLI::Validator non_empty() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "must not be empty" : ""; }, "");
}

CLI::Validator norm_name() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        for (const NormEntry& e : norms())
          if (e.name == s) return "";
        return "unknown norm '" + s + "' (expected one of: " + norm_names() + ")";
      },
      "");
}

}  // namespace normlab::experiments::commands
