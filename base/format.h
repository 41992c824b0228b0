// Python-style formatting (Python's repr) of numbers and booleans, as PyTorch prints them in module
// reprs and error messages: the one number formatter of normlab's messages. (Shapes as Python
// tuples: autograd::py_tuple, autograd/shape.h.)
#pragma once
#include <string>

namespace normlab::base {

// Python's repr of a float, as PyTorch's module reprs print it: 1e-05, 0.1, 1.0, 1e+16.
std::string py_float(double v);
// "True" or "False".
inline std::string py_bool(bool b) { return b ? "True" : "False"; }

}  // namespace normlab::base
