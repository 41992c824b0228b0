// Differentiable shape ops: reshape, squeeze/unsqueeze, flatten, permute/transpose, expand, narrow.
// Tensors are always contiguous: reshape-like ops share storage, permute and expand copy.
#pragma once
#include <vector>

#include "autograd/tensor.h"

namespace normlab::autograd {

// Same data, new shape with the same element count; one dim may be -1 (inferred).
Tensor reshape(const Tensor& x, Shape shape);
// Inserts a dim of size 1 at dim (in [-rank-1, rank]).
Tensor unsqueeze(const Tensor& x, int64_t dim);
// Removes dim if its size is 1 (otherwise returns x unchanged, as PyTorch).
Tensor squeeze(const Tensor& x, int64_t dim);
// Removes every dim of size 1.
Tensor squeeze(const Tensor& x);
// Merges dims start..end into one.
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
// Reorders dims: out.shape[i] = x.shape[perm[i]].
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
// Swaps two dims.
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
// Broadcasts x to shape (sizes of 1 stretch; -1 keeps a size; new leading dims allowed).
Tensor expand(const Tensor& x, Shape shape);
// Rows start..start+length of dim 0, sharing storage (a batch slice).
Tensor narrow(const Tensor& x, int64_t start, int64_t length);

}  // namespace normlab::autograd
