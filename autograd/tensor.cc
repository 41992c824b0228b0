// Tensor: storage, element access, factories, printing and the in-place helpers.
#include "autograd/tensor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <algorithm>

#include "autograd/allocator.h"
#include "base/format.h"
#include "autograd/engine.h"
#include "autograd/elementwise.h"
#include "autograd/kernels/elementwise.h"

namespace normlab::autograd {

Storage::Storage(size_t n) : bytes(n) {
  // 64-byte aligned (a cache line, the widest SIMD vector), rounded up to a size class of the
  // caching allocator (autograd/allocator.h), which reuses the buffers of freed storages.
  data = detail::allocate_storage(n);
  if (!data) throw Error("out of memory: could not allocate " + std::to_string(n) + " bytes");
}

Storage::Storage(void* d, size_t n, std::function<void()> r) : data(d), bytes(n), release(std::move(r)) {}

Storage::~Storage() {
  if (release) release();
  else detail::free_storage(data, bytes);
}

TensorImpl& Tensor::impl() const {
  if (!impl_) throw Error("this tensor is undefined (a default-constructed Tensor)");
  return *impl_;
}

int64_t Tensor::size(int64_t d) const {
  // normalize_dim accepts 0 and -1 for rank 0 (a reduction over "dim 0" of a scalar), but a
  // scalar has no size to return.
  if (dim() == 0)
    throw Error("size: dim " + std::to_string(d) + " out of range for a tensor of rank 0 (it has no dims)");
  return shape()[normalize_dim(d, dim(), "size")];
}

void* Tensor::raw_data() const {
  const TensorImpl& i = impl();
  return static_cast<char*>(i.storage->data) + i.offset * dtype_size(i.dtype);
}

template <typename T>
T* Tensor::data() const {
  if (dtype_of<T>() != dtype())
    throw Error("data<" + dtype_name(dtype_of<T>()) + ">(): the tensor is " + dtype_name(dtype()));
  return static_cast<T*>(raw_data());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;

double Tensor::flat(int64_t i) const {
  if (i < 0 || i >= numel())
    throw Error("index " + std::to_string(i) + " is out of range for a tensor of " +
                std::to_string(numel()) + " elements");
  return dtype() == DType::Float32 ? static_cast<const float*>(raw_data())[i]
                                   : static_cast<const double*>(raw_data())[i];
}

void Tensor::set_flat(int64_t i, double v) const {
  if (i < 0 || i >= numel())
    throw Error("index " + std::to_string(i) + " is out of range for a tensor of " +
                std::to_string(numel()) + " elements");
  if (dtype() == DType::Float32) static_cast<float*>(raw_data())[i] = static_cast<float>(v);
  else static_cast<double*>(raw_data())[i] = v;
}

double Tensor::item() const {
  if (numel() != 1)
    throw Error("item(): a tensor with " + std::to_string(numel()) +
                " elements cannot be converted to a scalar (shape " + shape_str(shape()) + ")");
  return flat(0);
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  if (static_cast<int64_t>(index.size()) != dim())
    throw Error("at(): got " + std::to_string(index.size()) + " indices for a tensor of rank " +
                std::to_string(dim()));
  int64_t pos = 0, d = 0;
  for (int64_t i : index) {
    const int64_t n = shape()[d];
    if (i < -n || i >= n)
      throw Error("at(): index " + std::to_string(i) + " is out of range for dim " +
                  std::to_string(d) + " of size " + std::to_string(n));
    pos = pos * n + (i < 0 ? i + n : i);
    ++d;
  }
  return flat(pos);
}

std::vector<double> Tensor::to_vector() const {
  std::vector<double> v(numel());
  for (int64_t i = 0; i < numel(); ++i) v[i] = flat(i);
  return v;
}

const Tensor& Tensor::requires_grad_(bool on) const {
  if (!is_leaf())
    throw Error("requires_grad_(): only leaf tensors can change requires_grad; use detach() to "
                "make a leaf from a computed tensor");
  impl().requires_grad = on;
  return *this;
}

void Tensor::set_grad(const Tensor& g) const {
  if (g.defined() && (g.shape() != shape() || g.dtype() != dtype()))
    throw Error("set_grad(): the gradient must have shape " + shape_str(shape()) + " and dtype " +
                dtype_name(dtype()) + ", got " + shape_str(g.shape()) + " " + dtype_name(g.dtype()));
  impl().grad = g.defined() ? g.impl_ptr() : nullptr;
}

void Tensor::retain_grad() const {
  if (is_leaf()) return;  // leaves keep their gradient anyway
  impl().retains_grad = true;
  grad_fn()->retained_ = impl_;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  run_backward(*this, gradient, retain_graph);
}

void Tensor::backward(const Tensor& gradient, const BackwardOptions& opts) const {
  run_backward(*this, gradient, opts);
}

Tensor Tensor::detach() const {
  auto d = std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>());
  d->shape = shape();
  d->dtype = dtype();
  d->storage = impl().storage;
  d->offset = impl().offset;
  return Tensor(std::move(d));
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype());
  std::memcpy(out.raw_data(), raw_data(), numel() * dtype_size(dtype()));
  return record("CloneBackward0", out, {*this},
                [](const Tensor& g, const Needs&) { return std::vector<Tensor>{g}; }, Backward::Differentiable);
}

Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  Tensor out = empty(shape(), t);
  const int64_t n = numel();
  if (t == DType::Float64) {
    const float* s = data<float>();
    double* d = out.data<double>();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    const double* s = data<double>();
    float* d = out.data<float>();
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
  }
  const DType from = dtype();
  return record("ToCopyBackward0", out, {*this}, [from](const Tensor& g, const Needs&) {
    return std::vector<Tensor>{g.to(from)};
  }, Backward::Differentiable);
}

// ---- Printing (PyTorch 1.13's repr, torch/_tensor_str.py, with its default print options) --------

namespace {

constexpr int64_t kEdgeItems = 3;      // shown at each end of a summarized dim
constexpr int64_t kThreshold = 1000;   // more elements than this are summarized
constexpr int kLineWidth = 80;
constexpr int kIndent = 7;             // strlen("tensor(")

// The indices shown along a dim of size n: all, or the first and last kEdgeItems.
std::vector<int64_t> shown_indices(int64_t n, bool summarize) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    idx.push_back(i);
  }
  return idx;
}

// PyTorch's _Formatter: one format and one width for every element, chosen from the shown values.
class Formatter {
 public:
  explicit Formatter(const std::vector<double>& shown) {
    double lo = INFINITY, hi = 0;
    bool any = false;
    for (double v : shown) {
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (!any) return;  // only zeros, nan, inf: "0.", width 1
    // Scientific when the magnitudes span more than 3 decades or are very large (or very small).
    sci_ = hi / lo > 1000 || hi > 1e8 || (!int_mode_ && lo < 1e-4);
    for (double v : shown)
      if (std::isfinite(v) && v != 0) width_ = std::max<int>(width_, plain(v).size());
  }
  int width() const { return width_; }
  // The value in this format, right-aligned to the common width.
  std::string format(double v) const {
    const std::string s = plain(v);
    return std::string(std::max<int>(0, width_ - static_cast<int>(s.size())), ' ') + s;
  }

 private:
  std::string plain(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    if (sci_) std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (int_mode_) std::snprintf(buf, sizeof buf, "%.0f.", v);  // "1." marks a float
    else std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
  bool int_mode_ = true, sci_ = false;
  int width_ = 1;
};

// The elements of dims d.. starting at flat position base, as PyTorch's _tensor_str_with_formatter:
// the last dim wraps at kLineWidth, higher dims are separated by dim-1 blank lines.
std::string format_dims(const Tensor& t, const Formatter& f, size_t d, int64_t base, int indent, bool summarize) {
  const Shape& s = t.shape();
  const int64_t n = s[d];
  const bool cut = summarize && n > 2 * kEdgeItems;
  std::string out = "[";
  if (d + 1 == s.size()) {
    std::vector<std::string> items;
    for (int64_t i : shown_indices(n, summarize)) {
      if (cut && i == n - kEdgeItems) items.push_back(" ...");
      items.push_back(f.format(t.flat(base + i)));
    }
    const size_t per_line = std::max(1, (kLineWidth - indent) / (f.width() + 2));
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += i % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += items[i];
    }
    return out + "]";
  }
  int64_t stride = 1;
  for (size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
  const std::string sep = "," + std::string(s.size() - d - 1, '\n') + std::string(indent + 1, ' ');
  bool first = true;
  for (int64_t i : shown_indices(n, summarize)) {
    if (!first) out += sep;
    if (cut && i == n - kEdgeItems) out += "..." + sep;
    out += format_dims(t, f, d + 1, base + i * stride, indent + 1, summarize);
    first = false;
  }
  return out + "]";
}

// Flat positions of the shown elements (PyTorch's get_summarized_data), for the Formatter.
void shown_values(const Tensor& t, size_t d, int64_t base, bool summarize, std::vector<double>& out) {
  const Shape& s = t.shape();
  if (d == s.size()) {
    out.push_back(t.flat(base));
    return;
  }
  int64_t stride = 1;
  for (size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
  for (int64_t i : shown_indices(s[d], summarize)) shown_values(t, d + 1, base + i * stride, summarize, out);
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::string body;
  std::vector<std::string> suffixes;
  if (numel() == 0) {
    if (dim() != 1) {  // PyTorch prints the shape as a Python tuple, unless it is (0,)
      std::string size = "size=(";
      for (int64_t i = 0; i < dim(); ++i) size += (i ? ", " : "") + std::to_string(shape()[i]);
      suffixes.push_back(size + ")");
    }
    body = "[]";
  } else {
    const bool summarize = numel() > kThreshold;
    std::vector<double> shown;
    shown_values(*this, 0, 0, summarize, shown);
    const Formatter f(shown);
    body = dim() == 0 ? f.format(flat(0)) : format_dims(*this, f, 0, 0, kIndent, summarize);
  }
  if (dtype() != DType::Float32) suffixes.push_back("dtype=torch." + dtype_name(dtype()));
  if (grad_fn()) suffixes.push_back("grad_fn=<" + grad_fn()->name() + ">");
  else if (requires_grad()) suffixes.push_back("requires_grad=True");
  // Suffixes follow on the last line while it stays within kLineWidth (PyTorch's _add_suffixes).
  std::string out = "tensor(" + body;
  const size_t nl = out.rfind('\n');
  size_t line = nl == std::string::npos ? out.size() + 2 : out.size() - nl + 1;
  for (const std::string& s : suffixes) {
    if (line + s.size() + 2 > kLineWidth) {
      out += ",\n" + std::string(kIndent, ' ') + s;
      line = kIndent + s.size();
    } else {
      out += ", " + s;
      line += s.size() + 2;
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- Factories -----------------------------------------------------------------------------------

Tensor empty(const Shape& shape, DType dtype) {
  check_shape(shape, "empty");
  auto impl = std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>());
  impl->shape = shape;
  impl->dtype = dtype;
  // Both blocks come from the small-object pool, the data from the caching allocator.
  impl->storage =
      std::allocate_shared<Storage>(PoolAllocator<Storage>(), autograd::numel(shape) * dtype_size(dtype));
  return Tensor(std::move(impl));
}

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  fill_(t, value);
  return t;
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1, dtype); }
Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype()); }

Tensor arange(double start, double end, double step, DType dtype) {
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    throw Error("arange: start, end and step must be finite numbers, got start " + base::py_float(start) + ", end " +
                base::py_float(end) + ", step " + base::py_float(step));
  if (step == 0) throw Error("arange: step must be nonzero");
  if ((end - start) * step < 0)
    throw Error("arange: upper bound and larger bound inconsistent with step sign (start " +
                std::to_string(start) + ", end " + std::to_string(end) + ", step " +
                std::to_string(step) + ")");
  const double count = std::ceil((end - start) / step);
  if (!(count < 0x1p60))
    throw Error("arange: " + base::py_float(count) + " values from start " + base::py_float(start) + " to end " +
                base::py_float(end) + " by step " + base::py_float(step) + " are more than 2^60");
  const int64_t n = static_cast<int64_t>(count);
  Tensor t = empty({n}, dtype);
  for (int64_t i = 0; i < n; ++i) t.set_flat(i, start + i * step);
  return t;
}
Tensor arange(int64_t n, DType dtype) { return arange(0, static_cast<double>(n), 1, dtype); }

Tensor tensor(const std::vector<double>& values, const Shape& shape, DType dtype) {
  check_shape(shape, "tensor");
  if (static_cast<int64_t>(values.size()) != autograd::numel(shape))
    throw Error("tensor: " + std::to_string(values.size()) + " values cannot fill shape " +
                shape_str(shape) + " (" + std::to_string(autograd::numel(shape)) + " elements)");
  Tensor t = empty(shape, dtype);
  for (size_t i = 0; i < values.size(); ++i) t.set_flat(static_cast<int64_t>(i), values[i]);
  return t;
}
Tensor tensor(const std::vector<double>& values, DType dtype) {
  return tensor(values, {static_cast<int64_t>(values.size())}, dtype);
}

Tensor rand(const Shape& shape, Generator& gen, double lo, double hi, DType dtype) {
  Tensor t = empty(shape, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    // lo + (hi - lo) u with u < 1 can still round to hi (in float32, about once in 2^25 draws of
    // [0, 1)): such a draw becomes the largest value below hi, so the range stays [lo, hi).
    const T below_hi = std::nextafter(static_cast<T>(hi), static_cast<T>(lo));
    for (int64_t i = 0; i < t.numel(); ++i) {
      const T v = static_cast<T>(gen.uniform(lo, hi));
      p[i] = static_cast<double>(v) >= hi && hi > lo ? below_hi : v;
    }
  });
  return t;
}

Tensor randn(const Shape& shape, Generator& gen, double mean, double std, DType dtype) {
  Tensor t = empty(shape, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(mean + std * gen.normal());
  });
  return t;
}

// ---- In-place ------------------------------------------------------------------------------------

void check_inplace(const Tensor& t, const std::string& op) {
  if (grad_enabled() && t.requires_grad())
    throw Error(op + ": a tensor that requires grad cannot be modified in place while grad mode "
                "is on; wrap the update in a NoGradGuard");
}

void fill_(const Tensor& t, double value) {
  check_inplace(t, "fill_");
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::fill(t.numel(), static_cast<T>(value), t.data<T>());  // vector stores (GCC -O2 left this loop scalar)
  });
}

void copy_(const Tensor& dst, const Tensor& src) {
  check_inplace(dst, "copy_");
  if (dst.shape() != src.shape() || dst.dtype() != src.dtype())
    throw Error("copy_: destination is " + shape_str(dst.shape()) + " " + dtype_name(dst.dtype()) +
                ", source is " + shape_str(src.shape()) + " " + dtype_name(src.dtype()));
  std::memmove(dst.raw_data(), src.raw_data(), dst.numel() * dtype_size(dst.dtype()));
}

void convert_(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype) return;
  NoGradGuard no_grad;
  Tensor c = t.detach().to(dtype);
  TensorImpl& impl = t.impl();
  impl.storage = c.impl().storage;
  impl.offset = c.impl().offset;
  impl.dtype = dtype;
  if (impl.grad) impl.grad = Tensor(impl.grad).to(dtype).impl_ptr();
}

}  // namespace normlab::autograd
