// Differentiable matrix products: matmul (2-D, batched, broadcast over batch dims) and linear (x W^T + b, fused),
// also with a residual added or GELU on its input fused in.
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
/// residual + linear(x, weight, bias) as one op (a residual block's x + proj(h)): the product adds
/// the residual where it stores y, with no pass of its own. residual has y's shape and dtype; its
/// gradient is dy. The same values as add(residual, linear(x, weight, bias)).
Tensor linear_add(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual);
/// linear(gelu(x), weight, bias) (+ residual when defined) as one op (a transformer MLP's
/// c_proj(gelu(h))): the forward keeps gelu'(x), and the backward's dx = (dy W) * gelu'(x) is one
/// product whose stores multiply. The same values as the composed ops.
Tensor gelu_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual = Tensor());

}  // namespace normlab::autograd
