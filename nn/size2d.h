// Size2d: a (height, width) pair given as one number or two, as PyTorch's int-or-tuple arguments of
// the 2-D layers (kernel_size=3 or kernel_size=(3, 2)), remembering which for the module's repr.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace normlab::nn {

/// A (height, width) pair given as one number or two, as PyTorch's int-or-tuple arguments.
struct Size2d {
  /// The height.
  int64_t h = 0, w = 0;  ///< the width
  bool single = true;  ///< given as one number (PyTorch prints it as one)

  /// V for both (implicit, as PyTorch's int argument).
  Size2d(int64_t v) : h(v), w(v), single(true) {}  // NOLINT: implicit, as PyTorch's int argument
  Size2d(int64_t h_, int64_t w_) : h(h_), w(w_), single(false) {}  ///< h_ and w_.

  std::array<int64_t, 2> pair() const { return {h, w}; }  ///< {h, w}.
  /// "3" (given as one number) or "(3, 2)".
  std::string str() const { return single ? std::to_string(h) : tuple(); }
  /// "(3, 3)" always (Conv2d stores its sizes as tuples).
  std::string tuple() const { return "(" + std::to_string(h) + ", " + std::to_string(w) + ")"; }
  bool operator==(const Size2d& o) const { return h == o.h && w == o.w; }  ///< True for the same sizes (however given).
  bool operator!=(const Size2d& o) const { return !(*this == o); }  ///< True for different sizes.
};

}  // namespace normlab::nn
