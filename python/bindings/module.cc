// The Python module normlab._normlab (pybind11): tensors from and to NumPy, the common ops with
// PyTorch's names and broadcasting, reverse-mode autograd (backward, .grad, autograd.grad,
// grad mode) and gradcheck. normlab's errors become Python exceptions (RuntimeError, or
// IndexError and TypeError where PyTorch raises those); no input from Python crashes the process.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "base/error.h"

namespace py = pybind11;
using normlab::autograd::DType;
using normlab::autograd::Shape;
using normlab::autograd::Tensor;
namespace ag = normlab::autograd;

namespace {

// The largest tensor a NumPy array may become (elements): beyond it, a clear error before any
// allocation (2^40 float64 values are 8 TiB).
constexpr int64_t kMaxElements = int64_t{1} << 40;

const char* py_dtype_name(DType d) { return d == DType::Float32 ? "float32" : "float64"; }

DType parse_dtype(const py::object& o, DType fallback) {
  if (o.is_none()) return fallback;
  const std::string s = py::str(o);
  if (s == "float32" || s == "normlab.float32" || s == "<class 'numpy.float32'>") return DType::Float32;
  if (s == "float64" || s == "normlab.float64" || s == "<class 'numpy.float64'>") return DType::Float64;
  throw py::type_error("dtype must be float32 or float64, got " + s);
}

// The array's values into t (of T, t.numel() of them), NumPy converting type and layout first.
template <typename T>
void copy_in(const py::array& a, const Tensor& t) {
  const auto c = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!c) throw py::type_error("normlab.tensor: the array cannot be read as " + std::string(py::str(py::dtype::of<T>())));
  std::memcpy(t.data<T>(), c.data(), static_cast<size_t>(t.numel()) * sizeof(T));
}

// A new array of T with a copy of t's values.
template <typename T>
py::array copy_out(const Tensor& t) {
  py::array_t<T> a(std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
  if (t.numel()) std::memcpy(a.mutable_data(), t.data<T>(), static_cast<size_t>(t.numel()) * sizeof(T));
  return a;
}

// A tensor holding a copy of the array's values (any layout: NumPy makes it C-contiguous first),
// float64 arrays as float64 and every other numeric array as float32 unless dtype says otherwise.
Tensor from_array(const py::array& a, const py::object& dtype_obj) {
  if (a.dtype().kind() != 'f' && a.dtype().kind() != 'i' && a.dtype().kind() != 'u' && a.dtype().kind() != 'b')
    throw py::type_error("normlab.tensor: expected a numeric array, got dtype " + std::string(py::str(a.dtype())));
  const DType dt = parse_dtype(dtype_obj, a.dtype().is(py::dtype::of<double>()) ? DType::Float64 : DType::Float32);
  Shape shape;
  int64_t n = 1;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    shape.push_back(static_cast<int64_t>(a.shape(i)));
    n *= std::max<int64_t>(1, static_cast<int64_t>(a.shape(i)));
    if (n > kMaxElements) throw py::value_error("normlab.tensor: the array is too large (more than 2^40 elements)");
  }
  Tensor t = ag::empty(shape, dt);
  if (t.numel() == 0) return t;
  if (dt == DType::Float32) copy_in<float>(a, t);
  else copy_in<double>(a, t);
  return t;
}

// normlab.tensor(data): an array, a nested list or a number.
Tensor make_tensor(const py::object& data, const py::object& dtype, bool requires_grad) {
  if (py::isinstance<Tensor>(data)) {
    Tensor t = data.cast<Tensor>().detach().clone();
    if (!dtype.is_none()) t = t.to(parse_dtype(dtype, t.dtype()));
    if (requires_grad) t.requires_grad_(true);
    return t;
  }
  const py::array a = py::array::ensure(data);
  if (!a) throw py::type_error("normlab.tensor: expected an array, a list of numbers or a number");
  Tensor t = from_array(a, dtype);
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// A NumPy array with a copy of the tensor's values (the tensor is contiguous: the copy is one memcpy).
py::array to_array(const Tensor& t) { return t.dtype() == DType::Float32 ? copy_out<float>(t) : copy_out<double>(t); }

// A Python operand of a binary op: a Tensor, or a number (broadcast as a scalar of the tensor's dtype).
Tensor operand(const py::object& o, const Tensor& like) {
  if (py::isinstance<Tensor>(o)) return o.cast<Tensor>();
  if (py::isinstance<py::float_>(o) || py::isinstance<py::int_>(o) || py::isinstance<py::bool_>(o))
    return ag::scalar(o.cast<double>(), like.dtype());
  const py::array a = py::array::ensure(o);
  if (a) return from_array(a, py::str(py_dtype_name(like.dtype())));
  throw py::type_error("unsupported operand of type " + std::string(py::str(py::type::of(o))) +
                       ": expected a Tensor, a number or an array");
}

std::vector<int64_t> dims_of(const py::object& dim) {
  if (dim.is_none()) return {};
  if (py::isinstance<py::int_>(dim)) return {dim.cast<int64_t>()};
  return dim.cast<std::vector<int64_t>>();
}

std::vector<int64_t> shape_of(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) return args[0].cast<std::vector<int64_t>>();
  std::vector<int64_t> s;
  for (const auto& a : args) s.push_back(a.cast<int64_t>());
  return s;
}

// Python's index of dim d into a tensor of rank n (negative from the end), as an IndexError when
// out of range.
int64_t wrap_index(int64_t i, int64_t size) {
  if (i < -size || i >= size)
    throw py::index_error("index " + std::to_string(i) + " is out of bounds for dimension 0 with size " +
                          std::to_string(size));
  return i < 0 ? i + size : i;
}

// The shape as a Python tuple.
py::tuple shape_tuple(const Tensor& x) {
  return py::tuple(py::cast(std::vector<int64_t>(x.shape().begin(), x.shape().end())));
}

std::string repr(const Tensor& t) {
  std::string s = t.str();
  if (t.requires_grad()) s += " (requires_grad=True)";
  return s;
}

}  // namespace

PYBIND11_MODULE(_normlab, m) {
  m.doc() = "normlab's C++ core: tensors, ops and reverse-mode autograd";
  // normlab::Error (bad input in normlab's words) becomes a RuntimeError, as PyTorch's errors are.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const normlab::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.attr("float32") = py::str("float32");
  m.attr("float64") = py::str("float64");

  py::class_<Tensor> t(m, "Tensor", "A float32 or float64 tensor (normlab::autograd::Tensor).");
  t.def_property_readonly("shape", &shape_tuple)
      .def("size", [](const Tensor& x, const py::object& d) -> py::object {
        if (d.is_none()) return shape_tuple(x);
        return py::int_(x.size(d.cast<int64_t>()));
      }, py::arg("dim") = py::none())
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def_property_readonly("dtype", [](const Tensor& x) { return py_dtype_name(x.dtype()); })
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](const Tensor& x, bool on) { x.requires_grad_(on); })
      .def("requires_grad_", [](const Tensor& x, bool on) { return x.requires_grad_(on); }, py::arg("requires_grad") = true)
      .def_property("grad", [](const Tensor& x) -> py::object {
        const Tensor g = x.grad();
        return g.defined() ? py::cast(g) : py::none();
      }, [](const Tensor& x, const py::object& g) { x.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def("retain_grad", &Tensor::retain_grad)
      .def("backward", [](const Tensor& x, const py::object& gradient, const py::object& retain_graph, bool create_graph) {
        ag::BackwardOptions o;
        if (!retain_graph.is_none()) o.retain_graph = retain_graph.cast<bool>();
        o.create_graph = create_graph;
        const Tensor g = gradient.is_none() ? Tensor() : gradient.cast<Tensor>();
        py::gil_scoped_release release;
        x.backward(g, o);
      }, py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false)
      .def("detach", &Tensor::detach)
      .def("clone", &Tensor::clone)
      .def("numpy", [](const Tensor& x) {
        if (x.requires_grad())
          throw py::value_error("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
        return to_array(x);
      })
      .def("__array__", [](const Tensor& x, const py::object&) { return to_array(x.detach()); },
           py::arg("dtype") = py::none())
      .def("tolist", [](const Tensor& x) { return to_array(x.detach()).attr("tolist")(); })
      .def("item", [](const Tensor& x) {
        if (x.numel() != 1)
          throw py::value_error("a Tensor with " + std::to_string(x.numel()) + " elements cannot be converted to Scalar");
        return x.item();
      })
      .def("float", [](const Tensor& x) { return x.to(DType::Float32); })
      .def("double", [](const Tensor& x) { return x.to(DType::Float64); })
      .def("to", [](const Tensor& x, const py::object& d) { return x.to(parse_dtype(d, x.dtype())); })
      .def("__len__", [](const Tensor& x) {
        if (x.dim() == 0) throw py::type_error("len() of a 0-d tensor");
        return x.size(0);
      })
      .def("__getitem__", [](const Tensor& x, int64_t i) {
        if (x.dim() == 0) throw py::index_error("invalid index of a 0-dim tensor");
        return ag::select(x, 0, wrap_index(i, x.size(0)));
      })
      .def("__repr__", repr)
      .def("__str__", repr)
      // Arithmetic with broadcasting; a number on either side.
      .def("__add__", [](const Tensor& a, const py::object& b) { return ag::add(a, operand(b, a)); })
      .def("__radd__", [](const Tensor& a, const py::object& b) { return ag::add(operand(b, a), a); })
      .def("__sub__", [](const Tensor& a, const py::object& b) { return ag::sub(a, operand(b, a)); })
      .def("__rsub__", [](const Tensor& a, const py::object& b) { return ag::sub(operand(b, a), a); })
      .def("__mul__", [](const Tensor& a, const py::object& b) { return ag::mul(a, operand(b, a)); })
      .def("__rmul__", [](const Tensor& a, const py::object& b) { return ag::mul(operand(b, a), a); })
      .def("__truediv__", [](const Tensor& a, const py::object& b) { return ag::div(a, operand(b, a)); })
      .def("__rtruediv__", [](const Tensor& a, const py::object& b) { return ag::div(operand(b, a), a); })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return ag::matmul(a, b); })
      .def("__neg__", [](const Tensor& a) { return ag::neg(a); })
      .def("__pow__", [](const Tensor& a, double p) { return ag::pow(a, p); })
      // Methods with PyTorch's names.
      .def("sum", [](const Tensor& x, const py::object& dim, bool keepdim) {
        return dim.is_none() ? ag::sum(x) : ag::sum(x, dims_of(dim), keepdim);
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("mean", [](const Tensor& x, const py::object& dim, bool keepdim) {
        return dim.is_none() ? ag::mean(x) : ag::mean(x, dims_of(dim), keepdim);
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("var", [](const Tensor& x, const py::object& dim, bool unbiased, bool keepdim) {
        return ag::var(x, dims_of(dim), unbiased, keepdim);
      }, py::arg("dim") = py::none(), py::arg("unbiased") = true, py::arg("keepdim") = false)
      .def("reshape", [](const Tensor& x, const py::args& shape) { return ag::reshape(x, shape_of(shape)); })
      .def("view", [](const Tensor& x, const py::args& shape) { return ag::reshape(x, shape_of(shape)); })
      .def("transpose", [](const Tensor& x, int64_t d0, int64_t d1) { return ag::transpose(x, d0, d1); })
      .def("permute", [](const Tensor& x, const py::args& dims) { return ag::permute(x, shape_of(dims)); })
      .def("unsqueeze", [](const Tensor& x, int64_t d) { return ag::unsqueeze(x, d); })
      .def("squeeze", [](const Tensor& x, const py::object& d) {
        return d.is_none() ? ag::squeeze(x) : ag::squeeze(x, d.cast<int64_t>());
      }, py::arg("dim") = py::none())
      .def("flatten", [](const Tensor& x, int64_t s, int64_t e) { return ag::flatten(x, s, e); },
           py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("exp", [](const Tensor& x) { return ag::exp(x); })
      .def("log", [](const Tensor& x) { return ag::log(x); })
      .def("sqrt", [](const Tensor& x) { return ag::sqrt(x); })
      .def("relu", [](const Tensor& x) { return ag::relu(x); })
      .def("tanh", [](const Tensor& x) { return ag::tanh(x); })
      .def("sigmoid", [](const Tensor& x) { return ag::sigmoid(x); })
      .def("softmax", [](const Tensor& x, int64_t dim) { return ag::softmax(x, dim); }, py::arg("dim"))
      .def("log_softmax", [](const Tensor& x, int64_t dim) { return ag::log_softmax(x, dim); }, py::arg("dim"));

  // Constructors.
  m.def("tensor", &make_tensor, py::arg("data"), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
        "A tensor with a copy of data (an array, a nested list or a number): float64 data stays float64, "
        "anything else becomes float32 unless dtype says otherwise.");
  m.def("from_numpy", [](const py::array& a) { return from_array(a, py::none()); }, py::arg("ndarray"),
        "A tensor with a copy of the array's values (float64 stays float64, other arrays become float32).");
  m.def("zeros", [](const py::args& shape, const py::object& dtype) { return ag::zeros(shape_of(shape), parse_dtype(dtype, DType::Float32)); },
        py::kw_only(), py::arg("dtype") = py::none());
  m.def("ones", [](const py::args& shape, const py::object& dtype) { return ag::ones(shape_of(shape), parse_dtype(dtype, DType::Float32)); },
        py::kw_only(), py::arg("dtype") = py::none());
  m.def("arange", [](double start, const py::object& end, double step, const py::object& dtype) {
    const DType d = parse_dtype(dtype, DType::Float32);
    return end.is_none() ? ag::arange(0, start, step, d) : ag::arange(start, end.cast<double>(), step, d);
  }, py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1.0, py::arg("dtype") = py::none());

  // Functions with PyTorch's names.
  m.def("matmul", [](const Tensor& a, const Tensor& b) { return ag::matmul(a, b); });
  m.def("exp", [](const Tensor& x) { return ag::exp(x); });
  m.def("log", [](const Tensor& x) { return ag::log(x); });
  m.def("relu", [](const Tensor& x) { return ag::relu(x); });
  m.def("tanh", [](const Tensor& x) { return ag::tanh(x); });
  m.def("sigmoid", [](const Tensor& x) { return ag::sigmoid(x); });
  m.def("softmax", [](const Tensor& x, int64_t dim) { return ag::softmax(x, dim); }, py::arg("input"), py::arg("dim"));
  m.def("log_softmax", [](const Tensor& x, int64_t dim) { return ag::log_softmax(x, dim); }, py::arg("input"),
        py::arg("dim"));
  m.def("cross_entropy", [](const Tensor& logits, const py::object& target) {
    std::vector<int64_t> y;
    if (py::isinstance<Tensor>(target)) {
      for (double v : target.cast<Tensor>().to_vector()) y.push_back(static_cast<int64_t>(v));
    } else {
      y = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(target).cast<std::vector<int64_t>>();
    }
    return ag::cross_entropy(logits, y);
  }, py::arg("input"), py::arg("target"), "Mean cross-entropy of logits (N, C) against class indices (N).");
  m.def("mse_loss", [](const Tensor& a, const Tensor& b) { return ag::mse_loss(a, b); }, py::arg("input"), py::arg("target"));
  m.def("layer_norm", [](const Tensor& x, const std::vector<int64_t>& shape, const py::object& w, const py::object& b, double eps) {
    return ag::layer_norm(x, shape, w.is_none() ? Tensor() : w.cast<Tensor>(), b.is_none() ? Tensor() : b.cast<Tensor>(), eps);
  }, py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
     py::arg("eps") = 1e-5);

  // Grad mode and autograd.
  m.def("is_grad_enabled", &ag::grad_enabled);
  m.def("set_grad_enabled", &ag::set_grad_enabled, py::arg("mode"));
  m.def("grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& grad_outputs, const py::object& retain_graph, bool create_graph) {
    ag::GradOptions o;
    if (!retain_graph.is_none()) o.retain_graph = retain_graph.cast<bool>();
    o.create_graph = create_graph;
    py::gil_scoped_release release;
    return ag::grad(outputs, inputs, grad_outputs, o);
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = std::vector<Tensor>{},
     py::arg("retain_graph") = py::none(), py::arg("create_graph") = false);
  m.def("gradcheck", [](const py::function& fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
    ag::GradcheckOptions o;
    o.eps = eps, o.atol = atol, o.rtol = rtol;
    return ag::gradcheck([&](const std::vector<Tensor>& xs) { return fn(*py::cast(xs)).cast<Tensor>(); }, inputs, o);
  }, py::arg("func"), py::arg("inputs"), py::arg("eps") = 1e-6, py::arg("atol") = 1e-5, py::arg("rtol") = 1e-3);
}
