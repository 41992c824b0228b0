// Numbers in optim's error messages and schedule names, written as the user would type them.
#pragma once
#include <charconv>
#include <string>

namespace normlab::optim {

// The shortest text that reads back as v: 0.9 -> "0.9", 1e-05 -> "1e-05", NaN -> "nan".
inline std::string format_number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace normlab::optim
