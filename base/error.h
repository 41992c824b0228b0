// The project's exception type: every user-facing error in normlab is a normlab::Error.
//
// Namespace: normlab, not normlab::base (the one exception to folder = namespace). Every library
// throws and checks unqualified (`throw Error(...)`, `check(...)`) from inside its own namespace
// normlab::<library>, which finds these by the enclosing namespace; users catch normlab::Error.
#pragma once
#include <stdexcept>
#include <string>
#include <type_traits>

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

// Throws normlab::Error(make_message()) unless cond holds: the message is built only on failure,
// for checks on hot paths (every forward) and in loops, e.g. check(ok, [&] { return name + ": ..."; }).
template <class MakeMessage, class = std::enable_if_t<std::is_invocable_r_v<std::string, MakeMessage&>>>
void check(bool cond, MakeMessage&& make_message) {
  if (!cond) throw Error(make_message());
}

}  // namespace normlab
