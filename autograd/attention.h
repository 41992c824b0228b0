// Differentiable scaled dot-product attention: PyTorch 2's F.scaled_dot_product_attention on
// (B, H, T, D) tensors, and the packed causal self-attention of a GPT block, which reads q, k, v
// straight out of the (B, T, 3C) output of its qkv projection and writes (B, T, C) with the heads
// merged (no split, permute or copy). Each forward is one fused kernel call
// (autograd/kernels/attention.h) that never builds the (T, T) score matrix; the backward recomputes
// the probabilities from the saved per-row log-sum-exp. In a create_graph pass the kernel's gradients
// are one recorded op whose backward is the double backward written out (autograd/attention.cc), of
// ops recorded in their turn when a pass differentiates it again.
#pragma once
#include <cstdint>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// q, k, v (B, H, T, D), one shape and dtype -> (B, H, T, D):
///   softmax(q k^T / sqrt(D) + mask) v,  mask_ij = -inf for j > i when causal, else 0.
/// (PyTorch's attn_mask, dropout_p and distinct key lengths are not supported.)
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal = false);

/// Multi-head causal self-attention on nanoGPT's packed q, k, v.
/// qkv (B, T, 3C), nanoGPT's c_attn output -> (B, T, C): q, k, v = qkv split into three along the
/// last dim, each cut into `heads` heads of D = C / heads features (head h: features [h D, (h+1) D)),
/// causal attention per head, and the heads' outputs side by side again. The same as nanoGPT's
///   q, k, v = qkv.split(C, dim=2); q = q.view(B, T, heads, D).transpose(1, 2) (k, v likewise)
///   y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
Tensor causal_self_attention(const Tensor& qkv, int64_t heads);

}  // namespace normlab::autograd
