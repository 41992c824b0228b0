// Checks of command-line values as the user typed them (CLI11 validators): whole numbers in a
// range without overflow or clamping, finite real numbers in a range, non-empty text. A value
// that fails is a usage error naming the flag, the accepted range and what was given.
#pragma once
#include <cstdint>

#include <CLI/CLI.hpp>

namespace normlab::experiments::commands {

// A whole number in [lo, hi], e.g. "--batch-size: expected a whole number from 1 to 2147483647,
// got '99999999999999999999'".
CLI::Validator whole(int64_t lo, int64_t hi);
// A whole number in [0, 2^64 - 1] (seeds).
CLI::Validator seed_value();
// A finite number in [lo, hi] (open at an end when lo_open / hi_open).
CLI::Validator real(double lo, double hi, bool lo_open = false, bool hi_open = false);
// A finite number >= 0.
CLI::Validator non_negative();
// Text that is not empty.
CLI::Validator non_empty();
// The name of a registered norm, e.g. "--cnn-norms: unknown norm 'foo' (expected one of: ...)";
// checked as typed, also where the runs that would use it do not run.
CLI::Validator norm_name();

}  // namespace normlab::experiments::commands
