// Embedding lookup as an op (PyTorch's F.embedding): rows of a weight table picked by integer ids.
#pragma once
#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// out[i..., :] = weight[ids[i...], :] for weight (V, D): out has shape (*ids_shape, D). normlab has no
/// integer dtype, so the ids come as a flat row-major vector with their shape (numel(ids_shape) ==
/// ids.size()). An id outside [0, V) is an error naming the id, its position and V.
/// Backward: grad_weight (V, D) = sum over positions i of one-hot(ids[i]) grad_out[i, :], the rows
/// of grad_out added in position order (a repeated id accumulates), independent of the thread count.
Tensor embedding(const std::vector<int64_t>& ids, const Shape& ids_shape, const Tensor& weight);

}  // namespace normlab::autograd
