// Conversions the bindings share (convert.h): dtype names, NumPy arrays to and from tensors, the
// ops' Python operands, shapes and dims.
#include "python/bindings/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

namespace normlab::python {

namespace ag = normlab::autograd;

namespace {

// The array's values into t (of T, t.numel() of them), NumPy converting type and layout first.
template <typename T>
void copy_in(const py::array& a, const Tensor& t) {
  const auto c = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!c) throw py::type_error("normlab.tensor: the array cannot be read as " + std::string(py::str(py::dtype::of<T>())));
  std::memcpy(t.data<T>(), c.data(), static_cast<size_t>(t.numel()) * sizeof(T));
}

// The array's shape, refused (naming who) before any allocation when it has more than kMaxElements.
Shape array_shape(const py::array& a, const char* who) {
  Shape shape;
  int64_t n = 1;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    shape.push_back(static_cast<int64_t>(a.shape(i)));
    n *= std::max<int64_t>(1, static_cast<int64_t>(a.shape(i)));
    if (n > kMaxElements) throw py::value_error(std::string(who) + ": the array is too large (more than 2^40 elements)");
  }
  return shape;
}

// A new array of T with a copy of t's values.
template <typename T>
py::array copy_out(const Tensor& t) {
  py::array_t<T> a(std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
  if (t.numel()) std::memcpy(a.mutable_data(), t.data<T>(), static_cast<size_t>(t.numel()) * sizeof(T));
  return a;
}

}  // namespace

const char* py_dtype_name(DType d) { return d == DType::Float32 ? "float32" : "float64"; }

DType parse_dtype(const py::object& o, DType fallback) {
  if (o.is_none()) return fallback;
  const std::string s = py::str(o);
  if (s == "float32" || s == "normlab.float32" || s == "<class 'numpy.float32'>") return DType::Float32;
  if (s == "float64" || s == "normlab.float64" || s == "<class 'numpy.float64'>") return DType::Float64;
  throw py::type_error("dtype must be float32 or float64, got " + s);
}


// A tensor holding a copy of the array's values (any layout: NumPy makes it C-contiguous first),
// float64 arrays as float64 and every other numeric array as float32 unless dtype says otherwise.
Tensor from_array(const py::array& a, const py::object& dtype_obj) {
  if (a.dtype().kind() != 'f' && a.dtype().kind() != 'i' && a.dtype().kind() != 'u' && a.dtype().kind() != 'b')
    throw py::type_error("normlab.tensor: expected a numeric array, got dtype " + std::string(py::str(a.dtype())));
  const DType dt = parse_dtype(dtype_obj, a.dtype().is(py::dtype::of<double>()) ? DType::Float64 : DType::Float32);
  const Shape shape = array_shape(a, "normlab.tensor");
  Tensor t = ag::empty(shape, dt);
  if (t.numel() == 0) return t;
  if (dt == DType::Float32) copy_in<float>(a, t);
  else copy_in<double>(a, t);
  return t;
}

Tensor borrow_array(const py::array& a) {
  const bool f32 = a.dtype().is(py::dtype::of<float>()), f64 = a.dtype().is(py::dtype::of<double>());
  const int flags = a.flags();
  const bool shareable = (f32 || f64) && (flags & py::array::c_style) && (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) &&
                         (flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_);
  if (!shareable) return from_array(a, py::none());
  const Shape shape = array_shape(a, "normlab.from_numpy");
  // The storage holds a reference to the array, dropped (with the GIL) when the last tensor lets go
  // of it; at interpreter shutdown it is left to the exiting process.
  auto* keep = new py::object(a);
  const auto release = [keep] {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
    py::gil_scoped_acquire gil;
    delete keep;
  };
  auto impl = std::make_shared<ag::TensorImpl>();
  impl->shape = shape;
  impl->dtype = f32 ? DType::Float32 : DType::Float64;
  impl->storage = std::make_shared<ag::Storage>(py::array(a).mutable_data(), static_cast<size_t>(a.nbytes()), release);
  return Tensor(impl);
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
  // As PyTorch: a NumPy array keeps float64; a list or a number becomes the default float32.
  const bool is_array = py::isinstance<py::array>(data);
  Tensor t = from_array(a, dtype.is_none() && !is_array ? py::str("float32") : dtype);
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// A NumPy array with a copy of the tensor's values (the tensor is contiguous: the copy is one memcpy).
py::array to_array(const Tensor& t) { return t.dtype() == DType::Float32 ? copy_out<float>(t) : copy_out<double>(t); }

py::array share_array(const Tensor& t) {
  // The capsule holds a reference to the storage: the buffer lives as long as the array does,
  // whatever happens to the tensor.
  auto* keep = new std::shared_ptr<ag::Storage>(t.impl().storage);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<ag::Storage>*>(p); });
  const size_t es = t.dtype() == DType::Float32 ? sizeof(float) : sizeof(double);
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(es);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<py::ssize_t>(1, shape[i]);
  }
  void* data = static_cast<char*>(t.impl().storage->data) + t.impl().offset * static_cast<int64_t>(es);
  if (t.dtype() == DType::Float32) return py::array_t<float>(shape, strides, static_cast<float*>(data), owner);
  return py::array_t<double>(shape, strides, static_cast<double*>(data), owner);
}

void check_inplace(const Tensor& x, const char* who) {
  if (ag::grad_enabled() && x.requires_grad())
    throw std::runtime_error(std::string(who) + ": a tensor that requires grad cannot be modified in place while "
                             "grad mode is on; do it under `with normlab.no_grad():`");
}

// A Python operand of a binary op: a Tensor, or a number (broadcast as a scalar of the tensor's dtype).
Tensor operand(const py::object& o, const Tensor& like) {
  if (py::isinstance<Tensor>(o)) return o.cast<Tensor>();
  if (py::isinstance<py::float_>(o) || py::isinstance<py::int_>(o) || py::isinstance<py::bool_>(o))
    return ag::scalar(o.cast<double>(), like.dtype());
  if (py::isinstance<py::array>(o) || py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o))
    return from_array(py::array::ensure(o), py::str(py_dtype_name(like.dtype())));
  throw py::type_error("unsupported operand of type " + std::string(py::str(py::type::of(o))) +
                       ": expected a Tensor, a number or an array");
}

std::vector<int64_t> class_indices(const py::object& target, const char* who) {
  std::vector<int64_t> y;
  if (py::isinstance<Tensor>(target)) {
    const Tensor t = target.cast<Tensor>();
    if (t.dim() != 1)
      throw py::value_error(std::string(who) + ": expected class indices of shape (N), got a tensor of shape " +
                            ag::shape_str(t.shape()));
    for (double v : t.to_vector()) {
      if (!std::isfinite(v) || std::floor(v) != v || std::fabs(v) >= 0x1p62)
        throw py::value_error(std::string(who) + ": expected class indices that are whole numbers, got " +
                              std::to_string(v));
      y.push_back(static_cast<int64_t>(v));
    }
    return y;
  }
  const py::array a = py::array::ensure(target);
  if (!a || (a.dtype().kind() != 'i' && a.dtype().kind() != 'u'))
    throw py::type_error(std::string(who) + ": expected class indices as integers (an integer array, a list of ints "
                         "or a Tensor), got " + std::string(py::str(a ? py::object(a.dtype()) : py::type::of(target))));
  if (a.ndim() != 1)
    throw py::value_error(std::string(who) + ": expected class indices of shape (N), got an array of " +
                          std::to_string(a.ndim()) + " dims");
  const auto c = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!c) throw py::type_error(std::string(who) + ": the class indices cannot be read as int64");
  return std::vector<int64_t>(c.data(), c.data() + c.size());
}

std::vector<int64_t> dims_of(const py::object& dim) {
  if (dim.is_none()) return {};
  if (py::isinstance<py::int_>(dim)) return {dim.cast<int64_t>()};
  return dim.cast<std::vector<int64_t>>();
}

std::vector<int64_t> int_list(const py::handle& o, const char* what) {
  if (py::isinstance<py::int_>(o) && !py::isinstance<py::bool_>(o)) return {o.cast<int64_t>()};
  if (!py::isinstance<py::sequence>(o) || py::isinstance<py::str>(o))
    throw py::type_error(std::string(what) + " must be an int or a sequence of ints, got " + std::string(py::repr(o)));
  std::vector<int64_t> v;
  for (const auto& e : o.cast<py::sequence>()) {
    if (!py::isinstance<py::int_>(e) || py::isinstance<py::bool_>(e))
      throw py::type_error(std::string(what) + " must hold ints, got " + std::string(py::repr(o)));
    v.push_back(e.cast<int64_t>());
  }
  return v;
}

std::vector<int64_t> shape_of(const py::args& args) {
  if (args.size() == 1) return int_list(args[0], "the shape");
  return int_list(args, "the shape");
}


// The shape as a Python tuple.
py::tuple shape_tuple(const Tensor& x) {
  return py::tuple(py::cast(std::vector<int64_t>(x.shape().begin(), x.shape().end())));
}

}  // namespace normlab::python
