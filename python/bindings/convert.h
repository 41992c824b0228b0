// Conversions the bindings share: dtype names, NumPy arrays to and from tensors, Python
// operands of the ops, and shapes and dims given as Python arguments.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // every file of the module sees the same casters

#include <cstdint>
#include <vector>

#include "autograd/autograd.h"

namespace normlab::python {

namespace py = pybind11;
using autograd::DType;
using autograd::Shape;
using autograd::NamedTensors;
using autograd::Tensor;

/// The largest tensor a NumPy array may become (elements): beyond it, a clear error before any
/// allocation (2^40 float64 values are 8 TiB).
constexpr int64_t kMaxElements = int64_t{1} << 40;

/// "float32" or "float64".
const char* py_dtype_name(DType d);
/// A dtype given from Python ("float32", normlab.float64, numpy.float32, ...); None is fallback.
/// Anything else is a TypeError.
DType parse_dtype(const py::object& o, DType fallback);
/// A tensor holding a copy of the array's values (any layout: NumPy makes it C-contiguous first),
/// float64 arrays as float64 and every other numeric array as float32 unless dtype says otherwise.
Tensor from_array(const py::array& a, const py::object& dtype);
/// normlab.from_numpy(a): a tensor over the array's own memory (writes through either are seen by
/// both; the tensor keeps the array alive) when it is float32 or float64, C-contiguous, aligned and
/// writeable; otherwise a copy, as from_array.
Tensor borrow_array(const py::array& a);
/// normlab.tensor(data): an array, a nested list, a number or a Tensor (copied).
Tensor make_tensor(const py::object& data, const py::object& dtype, bool requires_grad);
/// A NumPy array with a copy of the tensor's values.
py::array to_array(const Tensor& t);
/// A NumPy array over the tensor's own values (no copy: writes through either are seen by both;
/// the array keeps the buffer alive), as torch.Tensor.numpy().
py::array share_array(const Tensor& t);
/// Refuses (RuntimeError naming `who`) an in-place write into a tensor that requires grad while
/// grad mode is on, as PyTorch refuses in-place updates of a leaf that requires grad.
void check_inplace(const Tensor& x, const char* who);
/// A Python operand of a binary op: a Tensor, a number (a scalar of like's dtype) or an array.
Tensor operand(const py::object& o, const Tensor& like);
/// Class indices (N) from a 1-d integer array or list, or a 1-d Tensor of whole numbers; anything
/// else is a TypeError or ValueError naming `who`.
std::vector<int64_t> class_indices(const py::object& target, const char* who);
/// dim=None (every dim), an int or a sequence of ints.
std::vector<int64_t> dims_of(const py::object& dim);
/// An int or a sequence of ints (not bools) as a vector; anything else a TypeError naming `what`.
std::vector<int64_t> int_list(const py::handle& o, const char* what);
/// A shape given as f(2, 3) or f((2, 3)).
std::vector<int64_t> shape_of(const py::args& args);
/// The shape as a Python tuple.
py::tuple shape_tuple(const Tensor& x);

}  // namespace normlab::python
