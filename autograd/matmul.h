// Differentiable matrix products: matmul (2-D, batched, broadcast over batch dims) and linear (x W^T + b, fused).
#pragma once
#include "autograd/tensor.h"

namespace normlab::autograd {

/// Matrix product with broadcast batch dims, torch.matmul for ranks >= 2.
/// a @ b as torch.matmul for ranks >= 2: (*ba, M, K) @ (*bb, K, N) -> (*broadcast(ba, bb), M, N), the
/// leading (batch) dims broadcast as in elementwise ops: (2, 1, 3, 4) @ (5, 4, 2) -> (2, 5, 3, 2);
/// (M, K) @ (K, N) -> (M, N) and a 2-D operand is shared by every batch of the other. Rank < 2,
/// K mismatched or batch dims that do not broadcast are an error naming both shapes. The gradient of
/// an operand broadcast over batch dims sums over them in batch order (independent of the threads).
Tensor matmul(const Tensor& a, const Tensor& b);
/// y = x W^T + b for x (*, in), W (out, in), b (out) or undefined; returns (*, out). The products
/// read W in place (no transpose is made) and the bias is added in the same pass.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace normlab::autograd
