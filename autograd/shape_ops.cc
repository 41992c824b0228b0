// Differentiable shape ops: forward and backward side by side.
#include "autograd/shape_ops.h"

#include <algorithm>
#include <cstring>

#include "autograd/engine.h"
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
  });
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
// a strided gather, one element at a time (data movement, no arithmetic).
template <typename T>
void permute_copy(const T* x, T* out, const Shape& xs, const std::vector<int64_t>& perm) {
  const auto xst = contiguous_strides(xs);
  const size_t r = perm.size();
  Shape os(r);
  std::vector<int64_t> st(r);
  for (size_t d = 0; d < r; ++d) os[d] = xs[perm[d]], st[d] = xst[perm[d]];
  const int64_t n = numel(os);
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = x[off];
    for (size_t d = r; d-- > 0;) {
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
  return record("PermuteBackward0", out, {x}, [inv](const Tensor& g, const Needs&) { return Grads{permute(g, inv)}; });
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
      else std::fill(d, d + row, src[off]);
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
  });
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
  return record("SliceBackward0", out, {x}, [xs = x.shape(), dt = x.dtype(), start](const Tensor& g, const Needs&) {
    Tensor gx = zeros(xs, dt);
    const int64_t row = xs[0] == 0 ? 0 : numel(xs) / xs[0];
    std::memcpy(static_cast<char*>(gx.raw_data()) + start * row * dtype_size(dt), g.raw_data(),
                g.numel() * dtype_size(dt));
    return Grads{gx};
  });
}

}  // namespace normlab::autograd
