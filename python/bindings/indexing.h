// Tensor.__getitem__ and __setitem__ (indexing.cc): NumPy's and PyTorch's indexing rules.
#pragma once
#include "python/bindings/convert.h"

namespace normlab::python {

/// x[key]: ints, slices of step >= 1, None, Ellipsis and at most one integer array or boolean
/// mask; differentiable. IndexError (or ValueError for a step below 1) for anything else.
Tensor getitem(const Tensor& x, const py::object& key);
/// x[key] = value (a Tensor, a number or an array broadcast to the indexed part), in place: every
/// handle to x sees it. Refused while grad mode is on for a tensor that requires grad.
void setitem(const Tensor& x, const py::object& key, const py::object& value);

}  // namespace normlab::python
