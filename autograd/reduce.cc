// Differentiable reductions: each reduced run of adjacent dims is one (outer, r, inner) kernel call.
#include "autograd/reduce.h"

#include <algorithm>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/reduce.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace k = kernels;
using Grads = std::vector<Tensor>;

namespace {

// Sorted, de-duplicated, non-negative dims; an empty list means every dim.
std::vector<int64_t> reduce_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < x.dim(); ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    const int64_t nd = normalize_dim(d, x.dim(), op);
    if (std::find(out.begin(), out.end(), nd) != out.end())
      throw Error(std::string(op) + ": dim " + std::to_string(nd) + " appears more than once in the list of dims");
    out.push_back(nd);
  }
  std::sort(out.begin(), out.end());
  if (x.dim() == 0) out.clear();  // dim 0 / -1 of a rank-0 tensor is the tensor itself
  return out;
}

// The shape with reduced dims set to 1 (keepdim) or removed.
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    const bool red = std::binary_search(dims.begin(), dims.end(), i);
    if (!red) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Reduces over sorted dims without recording: each maximal run of adjacent dims, last run first.
Tensor reduce_raw(k::ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, const char* name) {
  Tensor cur = x;
  Shape s = x.shape();
  if (op == k::ReduceOp::Max)
    for (int64_t d : dims)
      if (s[d] == 0)
        throw Error(std::string(name) + ": cannot reduce over dim " + std::to_string(d) +
                    " of size 0 (shape " + shape_str(s) + "): a max of no values is undefined");
  size_t i = dims.size();
  if (i == 0) return x.detach().clone();
  while (i > 0) {
    size_t j = i - 1;  // the run is dims[j..i)
    while (j > 0 && dims[j - 1] + 1 == dims[j]) --j;
    const int64_t lo = dims[j], hi = dims[i - 1];
    int64_t outer = 1, r = 1, inner = 1;
    for (int64_t d = 0; d < lo; ++d) outer *= s[d];
    for (int64_t d = lo; d <= hi; ++d) r *= s[d];
    for (int64_t d = hi + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
    for (int64_t d = lo; d <= hi; ++d) s[d] = 1;
    Tensor next = empty(s, x.dtype());
    if (next.numel() > 0)
      dispatch(x.dtype(), [&](auto zero) {
        using T = decltype(zero);
        k::reduce(op, outer, r, inner, cur.data<T>(), next.data<T>());
      });
    cur = next;
    i = j;
  }
  return cur;
}

// 1 where a == b, else 0 (same shapes and dtype): the positions of the maxima in max's backward.
Tensor equal_mask(const Tensor& a, const Tensor& b) {
  Tensor mask = empty_like(a);
  if (a.numel() == 0) return mask;
  k::BroadcastPlan flat;  // one loop over all elements
  flat.rank = 1, flat.size[0] = a.numel(), flat.sa[0] = 1, flat.sb[0] = 1;
  dispatch(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::binary(k::BinaryOp::Eq, flat, a.data<T>(), b.data<T>(), mask.data<T>());
  });
  return mask;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  const auto d = reduce_dims(x, dims, "sum");
  Tensor out = reduce_raw(k::ReduceOp::Sum, x, d, "sum");
  out.impl().shape = reduced_shape(x.shape(), d, keepdim);
  // d sum / dx = 1: the gradient is broadcast back over the reduced dims
  return record(dims.empty() && !keepdim ? "SumBackward0" : "SumBackward1", out, {x}, [xs = x.shape(), d](const Tensor& g, const Needs&) {
    return Grads{expand(reshape(g, reduced_shape(xs, d, true)), xs)};
  }, Backward::Differentiable);
}

Tensor sum(const Tensor& x) { return sum(x, {}, false); }

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  const auto d = reduce_dims(x, dims, "mean");
  int64_t n = 1;
  for (int64_t i : d) n *= x.shape()[i];
  return renamed(div(sum(x, dims, keepdim), static_cast<double>(n)),
                 dims.empty() && !keepdim ? "MeanBackward0" : "MeanBackward1");
}

Tensor mean(const Tensor& x) { return mean(x, {}, false); }

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, bool unbiased, bool keepdim) {
  const auto d = reduce_dims(x, dims, "var");
  int64_t n = 1;
  for (int64_t i : d) n *= x.shape()[i];
  // Two passes (never E[x^2] - E[x]^2, which cancels catastrophically for a large mean).
  const Tensor centered = sub(x, mean(x, dims, true));
  return renamed(div(sum(mul(centered, centered), dims, keepdim), static_cast<double>(n - (unbiased ? 1 : 0))),
                 "VarBackward0");
}

Tensor max(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  const auto d = reduce_dims(x, dims, "max");
  Tensor out = reduce_raw(k::ReduceOp::Max, x, d, "max");
  Tensor kept = out.detach();  // keepdim shape, for the backward
  out.impl().shape = reduced_shape(x.shape(), d, keepdim);
  return record(dims.empty() && !keepdim ? "MaxBackward1" : "AmaxBackward0", out, {x}, [x = saved(x), kept, d](const Tensor& g, const Needs&) {
    // The gradient goes to the maxima, split evenly between ties (torch.amax):
    // dx = mask * g / count, mask = [x == max of its group], count = the group's number of maxima.
    const Tensor mask = equal_mask(x, expand(kept, x.shape()));
    const Tensor count = sum(mask, d, true);
    // mask and count are constants (the derivative of a max is 0 almost everywhere), so this is
    // the same formula in a create_graph pass.
    return Grads{mul(mask, div(reshape(g, kept.shape()), count))};
  }, Backward::Differentiable);
}

Tensor max(const Tensor& x) { return max(x, {}, false); }

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const size_t r = g.shape().size();
  if (shape.size() > r) throw Error("sum_to: cannot reduce shape " + shape_str(g.shape()) + " to " + shape_str(shape));
  std::vector<int64_t> dims;
  for (size_t i = 0; i < r; ++i) {
    if (i < r - shape.size()) dims.push_back(static_cast<int64_t>(i));
    else if (shape[i - (r - shape.size())] == 1 && g.shape()[i] != 1) dims.push_back(static_cast<int64_t>(i));
  }
  if (dims.empty()) return reshape(g, shape);
  return reshape(sum(g, dims, true), shape);
}

}  // namespace normlab::autograd
