// normlab.Tensor and the functions on tensors: NumPy in and out, the common ops with PyTorch's
// names and broadcasting, indexing (indexing.cc), in-place updates under no_grad, reverse-mode autograd
// (backward, .grad, autograd.grad, grad mode) and gradcheck.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "python/bindings/bindings.h"
#include "python/bindings/convert.h"
#include "python/bindings/indexing.h"

namespace normlab::python {

namespace ag = normlab::autograd;

namespace {

std::string repr(const Tensor& t) {
  std::string s = t.str();
  if (t.requires_grad()) s += " (requires_grad=True)";
  return s;
}

// x op= other under no_grad (PyTorch's add_, mul_, ...): the result of op is written into x's values,
// which every handle to x sees. Refused as check_inplace says, and when broadcasting would change
// x's shape.

template <typename Op>
Tensor inplace(const Tensor& x, const py::object& other, const char* name, Op op) {
  check_inplace(x, name);
  Tensor r;
  {
    ag::NoGradGuard no_grad;
    r = op(x, operand(other, x));
  }
  if (r.shape() != x.shape())
    throw py::value_error(std::string(name) + ": output with shape " + ag::shape_str(x.shape()) +
                          " doesn't match the broadcast shape " + ag::shape_str(r.shape()));
  ag::copy_(x, r.dtype() == x.dtype() ? r : r.to(x.dtype()));
  return x;
}

}  // namespace

void bind_tensor(py::module_& m) {
  m.attr("float32") = py::str("float32");
  m.attr("float64") = py::str("float64");

  py::class_<Tensor> t(m, "Tensor", "A float32 or float64 tensor (normlab::autograd::Tensor).");
  // Tensor(t) is a second handle to t (its values, grad and graph node); Tensor(data) is
  // normlab.tensor(data). normlab.nn.Parameter subclasses Tensor through this constructor.
  t.def(py::init([](const py::object& data) {
     return py::isinstance<Tensor>(data) ? data.cast<Tensor>() : make_tensor(data, py::none(), false);
   }), py::arg("data"))
      // An id of the tensor itself, shared by every handle to it (Python's `is` compares handles).
      .def("_id", [](const Tensor& x) { return reinterpret_cast<uintptr_t>(x.impl_ptr().get()); })
      .def_property_readonly("data", &Tensor::detach, "The values without the graph (detach()), sharing storage.")
      .def("add_", [](const Tensor& x, const py::object& o, double alpha) {
        return inplace(x, o, "add_", [alpha](const Tensor& a, const Tensor& b) { return alpha == 1 ? ag::add(a, b) : ag::add(a, ag::mul(b, ag::scalar(alpha, a.dtype()))); });
      }, py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0)
      .def("sub_", [](const Tensor& x, const py::object& o) { return inplace(x, o, "sub_", [](const Tensor& a, const Tensor& b) { return ag::sub(a, b); }); })
      .def("mul_", [](const Tensor& x, const py::object& o) { return inplace(x, o, "mul_", [](const Tensor& a, const Tensor& b) { return ag::mul(a, b); }); })
      .def("div_", [](const Tensor& x, const py::object& o) { return inplace(x, o, "div_", [](const Tensor& a, const Tensor& b) { return ag::div(a, b); }); })
      .def("copy_", [](const Tensor& x, const py::object& o) { return inplace(x, o, "copy_", [](const Tensor& a, const Tensor& b) { return b.shape() == a.shape() ? b : ag::expand(b, a.shape()); }); })
      .def("__iadd__", [](const Tensor& x, const py::object& o) { return inplace(x, o, "add_", [](const Tensor& a, const Tensor& b) { return ag::add(a, b); }); })
      .def("__isub__", [](const Tensor& x, const py::object& o) { return inplace(x, o, "sub_", [](const Tensor& a, const Tensor& b) { return ag::sub(a, b); }); })
      .def("__imul__", [](const Tensor& x, const py::object& o) { return inplace(x, o, "mul_", [](const Tensor& a, const Tensor& b) { return ag::mul(a, b); }); })
      .def("__itruediv__", [](const Tensor& x, const py::object& o) { return inplace(x, o, "div_", [](const Tensor& a, const Tensor& b) { return ag::div(a, b); }); })
      .def("zero_", [](const Tensor& x) { check_inplace(x, "zero_"); ag::fill_(x, 0); return x; })
      .def("fill_", [](const Tensor& x, double v) { check_inplace(x, "fill_"); ag::fill_(x, v); return x; }, py::arg("value"));
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
      }, [](const Tensor& x, const py::object& g) {
        if (!g.is_none() && !py::isinstance<Tensor>(g))
          throw py::type_error("assigned grad expected to be a Tensor or None but got grad of type " +
                               std::string(py::str(py::type::of(g).attr("__name__"))));
        x.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>());
      })
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
        return share_array(x);
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
      .def("__getitem__", &getitem, py::arg("key"))
      .def("__setitem__", &setitem, py::arg("key"), py::arg("value"))
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

  // A tensor converted to dtype in place, for Module.to(): every handle to it (an optimizer's
  // parameter list) sees the new dtype; its gradient is converted too.
  m.def("_convert_", [](const Tensor& t, const py::object& dtype) {
    ag::convert_(t, parse_dtype(dtype, t.dtype()));
  }, py::arg("tensor"), py::arg("dtype"));

  // Constructors.
  m.def("tensor", &make_tensor, py::arg("data"), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
        "A tensor with a copy of data (an array, a nested list or a number): float64 data stays float64, "
        "anything else becomes float32 unless dtype says otherwise.");
  m.def("from_numpy", &borrow_array, py::arg("ndarray"),
        "A tensor over the array's memory (as torch.from_numpy: writes through either are seen by both) when the "
        "array is float32 or float64, C-contiguous, aligned and writeable; otherwise a copy (other dtypes become "
        "float32).");
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
    const std::vector<int64_t> y = class_indices(target, "cross_entropy");
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
  // A Python function of tensors as autograd's GradcheckFn (a TypeError when it returns no Tensor).
  const auto as_fn = [](const py::function& fn, const char* who) {
    return [fn, who](const std::vector<Tensor>& xs) {
      const py::object out = fn(*py::cast(xs));
      if (!py::isinstance<Tensor>(out))
        throw py::type_error(std::string(who) + ": func must return a Tensor, got " +
                             std::string(py::str(py::type::of(out).attr("__name__"))));
      return out.cast<Tensor>();
    };
  };
  m.def("gradcheck", [as_fn](const py::function& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                             double rtol) {
    ag::GradcheckOptions o;
    o.eps = eps, o.atol = atol, o.rtol = rtol;
    return ag::gradcheck(as_fn(fn, "gradcheck"), inputs, o);
  }, py::arg("func"), py::arg("inputs"), py::arg("eps") = 1e-6, py::arg("atol") = 1e-5, py::arg("rtol") = 1e-3);
  m.def("gradgradcheck", [as_fn](const py::function& fn, const std::vector<Tensor>& inputs, const py::object& grad_outputs,
                                 double eps, double atol, double rtol) {
    ag::GradcheckOptions o;
    o.eps = eps, o.atol = atol, o.rtol = rtol;
    if (grad_outputs.is_none()) {
      ag::Generator gen(default_generator().next_u64());
      return ag::gradgradcheck(as_fn(fn, "gradgradcheck"), inputs, gen, o);
    }
    return ag::gradgradcheck(as_fn(fn, "gradgradcheck"), inputs, grad_outputs.cast<Tensor>(), o);
  }, py::arg("func"), py::arg("inputs"), py::arg("grad_outputs") = py::none(), py::arg("eps") = 1e-6,
     py::arg("atol") = 1e-5, py::arg("rtol") = 1e-3);
}

}  // namespace normlab::python
