// Differentiable reductions over any list of dims (keepdim as in PyTorch): sum, mean, var, max.
#pragma once
#include <vector>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// Sum of all elements (a rank-0 tensor).
Tensor sum(const Tensor& x);
/// Sum over dims (negative dims count from the end; an empty list means all dims).
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);  ///< Mean of all elements (a rank-0 tensor).
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);  ///< Mean over dims (negative dims count from the end; an empty list means all dims).
/// Variance over dims (an empty list means all dims), two-pass: sum((x - mean)^2) / (n - 1) if
/// unbiased, else / n. (No var(x, bool) overload: it would win over the dim list in var(x, {1}).)
Tensor var(const Tensor& x, const std::vector<int64_t>& dims = {}, bool unbiased = true, bool keepdim = false);
/// Maximum over dims (torch.amax): the gradient is shared evenly between tied maxima.
Tensor max(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor max(const Tensor& x);  ///< Maximum of all elements (a rank-0 tensor).
/// Sums a broadcast gradient g back to `shape` (the shape of the op's input before broadcasting).
Tensor sum_to(const Tensor& g, const Shape& shape);

}  // namespace normlab::autograd
