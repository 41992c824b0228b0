// Differentiable shape ops: forward and backward side by side.
#include "autograd/shape_ops.h"

#include <algorithm>
#include <cstring>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/reduce.h"

namespace normlab::autograd {

using Grads = std::vector<Tensor>;

Tensor reshape(const Tensor& x, Shape shape) {
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw Error("reshape: only one dim can be -1, got " + shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw Error("reshape: invalid size in shape " + shape_str(shape));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0 && known != 0 && x.numel() % known == 0) shape[infer] = x.numel() / known;
  if (infer >= 0 ? (known == 0 || x.numel() % known != 0) : known != x.numel())
    throw Error("reshape: shape " + shape_str(shape) + " is invalid for input of size " +
                std::to_string(x.numel()) + " (shape " + shape_str(x.shape()) + ")");
  Tensor out = x.detach();
  out.impl().shape = shape;
  return record("ReshapeAliasBackward0", out, {x}, [in = x.shape()](const Tensor& g, const Needs&) {
    return Grads{reshape(g, in)};
  }, Backward::Differentiable);
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  const int64_t r = x.dim();
  if (dim < -r - 1 || dim > r)
    throw Error("unsqueeze: dim " + std::to_string(dim) + " out of range for a tensor of rank " +
                std::to_string(r) + " (expected a dim in [" + std::to_string(-r - 1) + ", " +
                std::to_string(r) + "])");
  const int64_t d = dim < 0 ? dim + r + 1 : dim;
  Shape s = x.shape();
  s.insert(s.begin() + d, 1);
  return renamed(reshape(x, s), "UnsqueezeBackward0");
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  const int64_t d = normalize_dim(dim, x.dim(), "squeeze");
  if (x.dim() == 0 || x.shape()[d] != 1) return x;
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return renamed(reshape(x, s), "SqueezeBackward1");
}

Tensor squeeze(const Tensor& x) {
  Shape s;
  for (int64_t v : x.shape())
    if (v != 1) s.push_back(v);
  return renamed(reshape(x, s), "SqueezeBackward0");
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  const int64_t a = normalize_dim(start_dim, x.dim(), "flatten"), b = normalize_dim(end_dim, x.dim(), "flatten");
  if (a > b) throw Error("flatten: start_dim " + std::to_string(start_dim) + " comes after end_dim " + std::to_string(end_dim));
  Shape s(x.shape().begin(), x.shape().begin() + a);
  int64_t m = 1;
  for (int64_t i = a; i <= b; ++i) m *= x.shape()[i];
  s.push_back(m);
  s.insert(s.end(), x.shape().begin() + b + 1, x.shape().end());
  return reshape(x, s);
}

namespace {

// out[i] = x at the position whose index along out dim d is the index along x dim perm[d]:
// a strided gather (data movement, no arithmetic), one output row (the last dim) at a time: a
// memcpy when the last dim stays last (transpose(0, 1) of (T, B, H): rows of H), else a strided
// loop along the row; the index over the other dims advances once per row.
template <typename T>
void permute_copy(const T* x, T* out, const Shape& xs, const std::vector<int64_t>& perm) {
  const auto xst = contiguous_strides(xs);
  const size_t r = perm.size();
  Shape os(r);
  std::vector<int64_t> st(r);
  for (size_t d = 0; d < r; ++d) os[d] = xs[perm[d]], st[d] = xst[perm[d]];
  const int64_t n = numel(os);
  if (r == 0) {
    if (n == 1) out[0] = x[0];
    return;
  }
  const int64_t row = os[r - 1], step = st[r - 1];
  if (n == 0) return;
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; i += row) {
    T* o = out + i;
    if (step == 1) std::memcpy(o, x + off, static_cast<size_t>(row) * sizeof(T));
    else
      for (int64_t j = 0; j < row; ++j) o[j] = x[off + j * step];
    for (size_t d = r - 1; d-- > 0;) {  // the next row: advance the index over dims 0 .. r-2
      off += st[d];
      if (++idx[d] < os[d]) break;
      off -= st[d] * os[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  const int64_t r = x.dim();
  if (static_cast<int64_t>(perm.size()) != r)
    throw Error("permute: the permutation has " + std::to_string(perm.size()) +
                " dims but the tensor has rank " + std::to_string(r) + " (shape " + shape_str(x.shape()) + ")");
  std::vector<int64_t> p(r), inv(r, -1);
  for (int64_t i = 0; i < r; ++i) {
    p[i] = normalize_dim(perm[i], r, "permute");
    if (inv[p[i]] >= 0) throw Error("permute: dim " + std::to_string(p[i]) + " appears twice in the permutation");
    inv[p[i]] = i;
  }
  Shape os(r);
  for (int64_t i = 0; i < r; ++i) os[i] = x.shape()[p[i]];
  Tensor out = empty(os, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    permute_copy(x.data<T>(), out.data<T>(), x.shape(), p);
  });
  return record("PermuteBackward0", out, {x}, [inv](const Tensor& g, const Needs&) { return Grads{permute(g, inv)}; },
                Backward::Differentiable);
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  const int64_t a = normalize_dim(dim0, x.dim(), "transpose"), b = normalize_dim(dim1, x.dim(), "transpose");
  if (x.dim() == 0) return permute(x, {});  // dims 0 and -1 of a scalar: nothing to swap
  std::vector<int64_t> p(x.dim());
  for (int64_t i = 0; i < x.dim(); ++i) p[i] = i;
  std::swap(p[a], p[b]);
  return renamed(permute(x, p), "TransposeBackward0");
}

Tensor expand(const Tensor& x, Shape shape) {
  const size_t r = shape.size(), xr = x.shape().size();
  auto fail = [&] {
    throw Error("expand: the tensor of shape " + shape_str(x.shape()) + " cannot be expanded to " +
                "shape " + shape_str(shape) + " (only sizes of 1 can be expanded)");
  };
  if (r < xr) fail();
  const auto xst = contiguous_strides(x.shape());
  std::vector<int64_t> st(r, 0);
  for (size_t i = 0; i < r; ++i) {
    if (i < r - xr) {
      if (shape[i] < 0) fail();
      continue;
    }
    const int64_t xs = x.shape()[i - (r - xr)];
    if (shape[i] == -1) shape[i] = xs;
    if (xs == shape[i]) st[i] = xst[i - (r - xr)];
    else if (xs != 1) fail();
  }
  Tensor out = empty(shape, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    // Row by row along the last dim: a copy of a source row (stride 1) or one value repeated
    // (stride 0); the index over the other dims advances once per row.
    const int last = static_cast<int>(r) - 1;
    const int64_t row = last < 0 ? 1 : shape[last], row_stride = last < 0 ? 0 : st[last];
    const int64_t rows = row == 0 ? 0 : out.numel() / row;
    std::vector<int64_t> idx(r, 0);
    int64_t off = 0;
    for (int64_t q = 0; q < rows; ++q) {
      T* d = dst + q * row;
      if (row_stride == 1) std::memcpy(d, src + off, row * sizeof(T));
      else kernels::fill(row, src[off], d);
      for (int k = last - 1; k >= 0; --k) {
        off += st[k];
        if (++idx[k] < shape[k]) break;
        off -= st[k] * shape[k];
        idx[k] = 0;
      }
    }
  });
  return record("ExpandBackward0", out, {x}, [in = x.shape()](const Tensor& g, const Needs&) {
    return Grads{sum_to(g, in)};
  }, Backward::Differentiable);
}

Tensor narrow(const Tensor& x, int64_t start, int64_t length) {
  if (x.dim() == 0) throw Error("narrow: cannot narrow a rank-0 tensor");
  const int64_t n = x.shape()[0];
  if (start < 0 || length < 0 || start + length > n)
    throw Error("narrow: rows " + std::to_string(start) + " to " + std::to_string(start + length) +
                " are out of range for dim 0 of size " + std::to_string(n));
  Tensor out = x.detach();
  out.impl().shape[0] = length;
  out.impl().offset += start * (n == 0 ? 0 : x.numel() / n);
  // Backward: g goes into rows start.. of x's gradient, which the engine zero-fills once for all
  // the slices of x (the T steps of a sequence), not once per slice.
  return record_rows("SliceBackward0", out, x, start);
}

// ---- Sequence ops: narrow along a dim, cat, stack, split, select ------------------------------------
// Along dim d a tensor is viewed as (outer, n, inner): outer the product of the sizes before d,
// inner of those after. A slice or a piece of a cat is then `outer` blocks of (its size) * inner
// contiguous elements, copied block by block.

namespace {

// Copies `outer` blocks of `len` elements of es bytes: block o from src + o src_row + src_off to
// dst + o dst_row + dst_off (rows and offsets in elements).
void copy_blocks(const void* src, void* dst, int64_t outer, int64_t src_row, int64_t src_off, int64_t dst_row,
                 int64_t dst_off, int64_t len, size_t es) {
  if (len == 0) return;
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(d + (o * dst_row + dst_off) * es, s + (o * src_row + src_off) * es, len * es);
}

// Product of the sizes of dims [a, b).
int64_t dims_product(const Shape& s, int64_t a, int64_t b) {
  int64_t p = 1;
  for (int64_t i = a; i < b; ++i) p *= s[i];
  return p;
}

}  // namespace

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  if (x.dim() == 0) throw Error("narrow: cannot narrow a rank-0 tensor");
  const int64_t d = normalize_dim(dim, x.dim(), "narrow");
  if (d == 0) return narrow(x, start, length);
  const Shape& xs = x.shape();
  const int64_t n = xs[d];
  if (start < 0 || length < 0 || start + length > n)
    throw Error("narrow: positions " + std::to_string(start) + " to " + std::to_string(start + length) +
                " are out of range for dim " + std::to_string(d) + " of size " + std::to_string(n) +
                " (input of shape " + shape_str(xs) + ")");
  const int64_t outer = dims_product(xs, 0, d), inner = dims_product(xs, d + 1, x.dim());
  Shape os = xs;
  os[d] = length;
  Tensor out = empty(os, x.dtype());
  const size_t es = dtype_size(x.dtype());
  copy_blocks(x.raw_data(), out.raw_data(), outer, n * inner, start * inner, length * inner, 0, length * inner, es);
  // Backward: the gradient goes into the slice's blocks of a zero tensor of x's shape.
  return record("SliceBackward0", out, {x}, [xs, d, start](const Tensor& g, const Needs&) {
    return Grads{slice_backward(g, xs, d, start)};
  }, Backward::Differentiable);
}

Tensor slice_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start) {
  const int64_t d = normalize_dim(dim, static_cast<int64_t>(shape.size()), "slice_backward");
  const int64_t n = shape[d], length = g.dim() == static_cast<int64_t>(shape.size()) ? g.shape()[d] : -1;
  Shape gs = shape;
  if (length >= 0) gs[d] = length;
  if (length < 0 || g.shape() != gs || start < 0 || start + length > n)
    throw Error("slice_backward: a gradient of shape " + shape_str(g.shape()) + " is not a slice from position " +
                std::to_string(start) + " along dim " + std::to_string(d) + " of shape " + shape_str(shape));
  const int64_t outer = dims_product(shape, 0, d), inner = dims_product(shape, d + 1, static_cast<int64_t>(shape.size()));
  Tensor gx = zeros(shape, g.dtype());
  copy_blocks(g.raw_data(), gx.raw_data(), outer, length * inner, 0, n * inner, start * inner, length * inner,
              dtype_size(g.dtype()));
  return record("SliceBackwardBackward0", gx, {g}, [d, start, length](const Tensor& gg, const Needs&) {
    return Grads{narrow(gg, d, start, length)};
  }, Backward::Differentiable);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("cat: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) throw Error("cat: tensor " + std::to_string(i) + " is undefined");
    if (tensors[i].dim() == 0)
      throw Error("cat: zero-dimensional tensor (at position " + std::to_string(i) + ") cannot be concatenated");
  }
  const Tensor& first = tensors[0];
  const int64_t r = first.dim(), d = normalize_dim(dim, r, "cat");
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dtype() != first.dtype())
      throw Error("cat: expected tensors of one dtype, got " + std::string(dtype_name(first.dtype())) +
                  " (tensor 0) and " + dtype_name(t.dtype()) + " (tensor " + std::to_string(i) + ")");
    bool same = t.dim() == r;
    for (int64_t k = 0; same && k < r; ++k) same = k == d || t.shape()[k] == first.shape()[k];
    if (!same)
      throw Error("cat: expected tensors of the same shape except in dim " + std::to_string(d) + ", got " +
                  shape_str(first.shape()) + " (tensor 0) and " + shape_str(t.shape()) + " (tensor " +
                  std::to_string(i) + ")");
    total += t.shape()[d];
  }
  Shape os = first.shape();
  os[d] = total;
  const int64_t outer = dims_product(os, 0, d), inner = dims_product(os, d + 1, r);
  Tensor out = empty(os, first.dtype());
  const size_t es = dtype_size(first.dtype());
  std::vector<int64_t> sizes(tensors.size());
  int64_t at = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    sizes[i] = tensors[i].shape()[d];
    copy_blocks(tensors[i].raw_data(), out.raw_data(), outer, sizes[i] * inner, 0, total * inner, at * inner,
                sizes[i] * inner, es);
    at += sizes[i];
  }
  // Backward: each input's gradient is its slice of g along d.
  return record("CatBackward0", out, tensors, [d, sizes](const Tensor& g, const Needs& need) {
    Grads gs(sizes.size());
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (need[i]) gs[i] = narrow(g, d, start, sizes[i]);
      start += sizes[i];
    }
    return gs;
  }, Backward::Differentiable);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) throw Error("stack: tensor " + std::to_string(i) + " is undefined");
    if (tensors[i].shape() != tensors[0].shape())
      throw Error("stack: expected each tensor to be equal size, but got " + shape_str(tensors[0].shape()) +
                  " at entry 0 and " + shape_str(tensors[i].shape()) + " at entry " + std::to_string(i));
  }
  const int64_t r = tensors[0].dim();
  if (dim < -r - 1 || dim > r)
    throw Error("stack: dim " + std::to_string(dim) + " out of range for tensors of rank " + std::to_string(r) +
                " (expected a dim in [" + std::to_string(-r - 1) + ", " + std::to_string(r) + "])");
  const int64_t d = dim < 0 ? dim + r + 1 : dim;
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(unsqueeze(t, d));
  return renamed(cat(parts, d), "StackBackward0");
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  if (x.dim() == 0) throw Error("split: cannot split a rank-0 tensor");
  const int64_t d = normalize_dim(dim, x.dim(), "split");
  int64_t total = 0;
  std::string list = "[";
  for (size_t i = 0; i < sizes.size(); ++i) list += (i ? ", " : "") + std::to_string(sizes[i]);
  list += "]";
  for (int64_t s : sizes) {
    if (s < 0) throw Error("split: sizes must be >= 0, got " + list);
    total += s;
  }
  if (total != x.shape()[d])
    throw Error("split: split_sizes " + list + " must sum to " + std::to_string(x.shape()[d]) + ", the size of dim " +
                std::to_string(d) + " of the input of shape " + shape_str(x.shape()) + ", but they sum to " +
                std::to_string(total));
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, d, start, s));
    start += s;
  }
  return out;
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  if (x.dim() == 0) throw Error("select: cannot select on a rank-0 tensor");
  const int64_t d = normalize_dim(dim, x.dim(), "select");
  const int64_t n = x.shape()[d];
  if (index < -n || index >= n)
    throw Error("select: index " + std::to_string(index) + " out of range for dim " + std::to_string(d) +
                " of size " + std::to_string(n) + " (input of shape " + shape_str(x.shape()) + ")");
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return renamed(reshape(narrow(x, d, index < 0 ? index + n : index, 1), s), "SelectBackward0");
}

}  // namespace normlab::autograd
