// Element types of a tensor: float32 for training, float64 for gradient checks.
#pragma once
#include <cstddef>
#include <string>

namespace normlab::autograd {

/// The element type of a tensor: float32 or float64.
enum class DType { Float32, Float64 };

/// Bytes per element.
inline size_t dtype_size(DType t) { return t == DType::Float32 ? 4 : 8; }
/// PyTorch's name: "float32" or "float64".
inline std::string dtype_name(DType t) { return t == DType::Float32 ? "float32" : "float64"; }

/// The DType of the C++ type T (float or double).
template <typename T> constexpr DType dtype_of();
/// DType::Float32.
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
/// DType::Float64.
template <> constexpr DType dtype_of<double>() { return DType::Float64; }

/// Calls f with a value of the C++ type of `t` (float or double): dispatch(t, [&](auto zero) {...}).
template <typename F>
decltype(auto) dispatch(DType t, F&& f) {
  if (t == DType::Float32) return f(float{0});
  return f(double{0});
}

}  // namespace normlab::autograd
