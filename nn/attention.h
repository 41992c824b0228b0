// CausalSelfAttention: nanoGPT's multi-head causal self-attention layer, c_attn (the q, k, v
// projection) then the fused packed attention op, then c_proj (the output projection).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nn/linear.h"
#include "nn/module.h"

namespace normlab::nn {

/// Multi-head causal self-attention, nanoGPT's CausalSelfAttention module.
/// x (B, T, C) -> (B, T, C), C = width:
///   qkv = c_attn(x)                               (B, T, 3C), c_attn = Linear(C, 3C)
///   y = causal_self_attention(qkv, heads)         heads of C / heads features, token t attends to 0..t
///   out = c_proj(y)                               c_proj = Linear(C, C)
/// Init as nanoGPT (GPT-2): weights N(0, 0.02), biases 0, and c_proj's weight N(0, 0.02 / sqrt(2 n_layer))
/// (a residual projection: 2 n_layer of them add into the residual stream of an n_layer model; pass
/// n_layer = 1 for a lone layer). state_dict: c_attn.weight, c_attn.bias, c_proj.weight, c_proj.bias.
/// Throws normlab::Error for width < 1, heads < 1 or heads not dividing width (naming both).
class CausalSelfAttention : public Module {
 public:
  /// Throws for width < 1, heads < 1 or heads not dividing width.
  CausalSelfAttention(int64_t width, int64_t heads, Generator& gen, int64_t n_layer = 1,
                      DType dtype = DType::Float32);

  Tensor forward(const Tensor& x) override;
  /// residual + forward(x) (residual (B, T, C)), with c_proj's product adding the residual where it
  /// stores its output (autograd::linear_add); residual + (*this)(x) when this module or c_proj has
  /// a forward hook, so that the hooks see the call.
  Tensor forward_add(const Tensor& x, const Tensor& residual);
  /// "CausalSelfAttention" (str() lists c_attn and c_proj).
  std::string repr() const override { return "CausalSelfAttention"; }

  int64_t width() const { return width_; }  ///< C, the features per token.
  int64_t heads() const { return heads_; }  ///< Number of attention heads.
  const std::shared_ptr<Linear>& c_attn() const { return c_attn_; }  ///< The qkv projection, Linear(C, 3C).
  const std::shared_ptr<Linear>& c_proj() const { return c_proj_; }  ///< The output projection, Linear(C, C).

 private:
  Tensor attend(const Tensor& x);
  int64_t width_, heads_;
  std::shared_ptr<Linear> c_attn_, c_proj_;
};

/// nanoGPT's init of a Linear: weight N(0, std^2), bias (if any) 0.
void gpt_init_linear(Linear& layer, Generator& gen, double std = 0.02);

}  // namespace normlab::nn
