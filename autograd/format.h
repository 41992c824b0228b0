// Python-style formatting (Python's repr) of numbers, shapes and booleans, as PyTorch prints them
// in module reprs and error messages: the one number formatter of normlab's messages.
#pragma once
#include <string>

#include "autograd/shape.h"

namespace normlab::autograd {

// Python's repr of a float, as PyTorch's module reprs print it: 1e-05, 0.1, 1.0, 1e+16.
std::string py_float(double v);
// Python's repr of a shape as a tuple: (3,), (2, 3).
std::string py_tuple(const Shape& s);
// "True" or "False".
inline std::string py_bool(bool b) { return b ? "True" : "False"; }

}  // namespace normlab::autograd
