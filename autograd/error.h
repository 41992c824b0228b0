// The project's exception type: every user-facing error in normlab is a normlab::Error.
#pragma once
#include <stdexcept>
#include <string>

namespace normlab {

// Thrown for bad input anywhere in normlab; the message says what was expected and what was given.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws normlab::Error(message) unless cond holds.
inline void check(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}

}  // namespace normlab
