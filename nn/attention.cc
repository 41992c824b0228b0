// CausalSelfAttention: argument checks, nanoGPT's init, and the forward through the packed op.
#include "nn/attention.h"

#include <cmath>

#include "autograd/attention.h"
#include "nn/init.h"

namespace normlab::nn {

void gpt_init_linear(Linear& layer, Generator& gen, double std) {
  init::normal_(layer.weight(), 0, std, gen);
  if (layer.bias().defined()) init::zeros_(layer.bias());
}

CausalSelfAttention::CausalSelfAttention(int64_t width, int64_t heads, Generator& gen, int64_t n_layer, DType dtype)
    : width_(width), heads_(heads) {
  if (width < 1 || heads < 1)
    throw Error("CausalSelfAttention: expected width >= 1 and heads >= 1, got width=" + std::to_string(width) +
                ", heads=" + std::to_string(heads));
  if (width % heads != 0)
    throw Error("CausalSelfAttention: width=" + std::to_string(width) + " is not divisible by heads=" +
                std::to_string(heads));
  if (n_layer < 1)
    throw Error("CausalSelfAttention: expected n_layer >= 1, got " + std::to_string(n_layer));
  c_attn_ = register_module("c_attn", std::make_shared<Linear>(width, 3 * width, gen));
  c_proj_ = register_module("c_proj", std::make_shared<Linear>(width, width, gen));
  gpt_init_linear(*c_attn_, gen);
  gpt_init_linear(*c_proj_, gen, 0.02 / std::sqrt(2.0 * static_cast<double>(n_layer)));
  to(dtype);
}

// The heads' outputs before c_proj: x (B, T, C) -> (B, T, C).
Tensor CausalSelfAttention::attend(const Tensor& x) {
  if (x.dim() != 3 || x.size(2) != width_)
    throw Error("CausalSelfAttention(width=" + std::to_string(width_) + ", heads=" + std::to_string(heads_) +
                "): expected input of shape (B, T, " + std::to_string(width_) + "), got " +
                autograd::shape_str(x.shape()));
  return autograd::causal_self_attention((*c_attn_)(x), heads_);
}

Tensor CausalSelfAttention::forward(const Tensor& x) { return (*c_proj_)(attend(x)); }

Tensor CausalSelfAttention::forward_add(const Tensor& x, const Tensor& residual) {
  if (has_forward_hooks() || c_proj_->has_forward_hooks()) return residual + (*this)(x);  // the hooks see it
  return autograd::linear_add(attend(x), c_proj_->weight(), c_proj_->bias(), residual);
}

}  // namespace normlab::nn
