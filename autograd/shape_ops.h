// Differentiable shape ops: reshape, squeeze/unsqueeze, flatten, permute/transpose, expand, narrow,
// and the sequence ops cat, stack, split, select.
// Tensors are always contiguous: reshape-like ops share storage; permute, expand, cat, stack, and a
// narrow along a dim other than 0 copy.
#pragma once
#include <vector>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// Same data, new shape with the same element count; one dim may be -1 (inferred).
Tensor reshape(const Tensor& x, Shape shape);
/// Inserts a dim of size 1 at dim (in [-rank-1, rank]).
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// Removes dim if its size is 1 (otherwise returns x unchanged, as PyTorch).
Tensor squeeze(const Tensor& x, int64_t dim);
/// Removes every dim of size 1.
Tensor squeeze(const Tensor& x);
/// Merges dims start..end into one.
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
/// Reorders dims: out.shape[i] = x.shape[perm[i]].
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
/// Swaps two dims.
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
/// Broadcasts x to shape (sizes of 1 stretch; -1 keeps a size; new leading dims allowed).
Tensor expand(const Tensor& x, Shape shape);
/// Rows start..start+length of dim 0, sharing storage (a batch slice). Its backward adds into those
/// rows of x's gradient (autograd::record_rows), so T slices of x cost one gradient of x, not T.
Tensor narrow(const Tensor& x, int64_t start, int64_t length);
/// x[..., start:start+length, ...] along dim (negative counts from the end), keeping the dim. Along
/// dim 0 this is the sharing narrow above; along any other dim the slice is copied (the result is
/// contiguous, as every tensor here).
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
/// The gradient of narrow(x, dim, start, g.size(dim)) for an x of this shape: zeros with g in the
/// slice (PyTorch's slice_backward). Recorded: its own gradient is the narrow of its gradient.
Tensor slice_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start);

/// The tensors joined along dim (a copy): all of one dtype and rank, with equal sizes in every other
/// dim; dim may be negative. E.g. (B, 3) and (B, 5) along 1 give (B, 8).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
/// The tensors (all of one shape and dtype) stacked along a new dim (a copy): n tensors of shape
/// (A, B) along 1 give (A, n, B); dim is in [-rank-1, rank].
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
/// x cut along dim into consecutive pieces of these sizes (which must add up to x's size there), as
/// torch.split(x, sizes, dim): each piece is its own recorded narrow, so gradients flow from each.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
/// x[..., index, ...] along dim, with that dim dropped (x[:, t] for dim 1); index may be negative
/// (counts from the end). Shares storage along dim 0, copies otherwise.
Tensor select(const Tensor& x, int64_t dim, int64_t index);

}  // namespace normlab::autograd
