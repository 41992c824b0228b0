// Differentiable matrix products: matmul (2-D and batched 3-D) and linear (x W^T + b, fused).
#pragma once
#include "autograd/tensor.h"

namespace normlab::autograd {

// a @ b: (M, K) @ (K, N) -> (M, N); (B, M, K) @ (B, K, N) -> (B, M, N); a 2-D operand is shared
// by every batch of the other. Other ranks or mismatched sizes are an error naming both shapes.
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x W^T + b for x (*, in), W (out, in), b (out) or undefined; returns (*, out). The products
// read W in place (no transpose is made) and the bias is added in the same pass.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace normlab::autograd
