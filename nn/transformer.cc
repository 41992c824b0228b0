// TransformerBlock, its MLP and the token BatchNorm: construction with nanoGPT's init and names,
// and the pre- and post-norm forwards.
#include "nn/transformer.h"

#include <cmath>

#include "nn/activation.h"
#include "nn/layernorm.h"
#include "nn/rmsnorm.h"

namespace normlab::nn {

using autograd::shape_str;

// ---- Names of the choices -------------------------------------------------------------------------

std::string block_norm_name(BlockNorm norm) {
  switch (norm) {
    case BlockNorm::Layer: return "layer";
    case BlockNorm::RMS: return "rms";
    case BlockNorm::Batch: return "batch";
    case BlockNorm::None: return "none";
    case BlockNorm::NoisyBatch: return "noisybatch";
  }
  return "?";
}

bool has_batch_statistics(BlockNorm norm) { return norm == BlockNorm::Batch || norm == BlockNorm::NoisyBatch; }

BlockNorm parse_block_norm(const std::string& name) {
  for (BlockNorm n : {BlockNorm::Layer, BlockNorm::RMS, BlockNorm::Batch, BlockNorm::None, BlockNorm::NoisyBatch})
    if (block_norm_name(n) == name) return n;
  throw Error("unknown block norm '" + name + "': expected layer, rms, batch, none or noisybatch");
}

std::string norm_position_name(NormPosition position) { return position == NormPosition::Pre ? "pre" : "post"; }

NormPosition parse_norm_position(const std::string& name) {
  if (name == "pre") return NormPosition::Pre;
  if (name == "post") return NormPosition::Post;
  throw Error("unknown norm position '" + name + "': expected pre or post");
}

// ---- TokenBatchNorm -------------------------------------------------------------------------------

TokenBatchNorm::TokenBatchNorm(int64_t num_features, DType dtype)
    : BatchNorm1d(num_features, 1e-5, 0.1, true, true, dtype) {}

Tensor TokenBatchNorm::forward(const Tensor& x) {
  if (x.dim() != 3 || x.size(2) != num_features())
    throw Error("TokenBatchNorm(" + std::to_string(num_features()) + "): expected input of shape (B, T, " +
                std::to_string(num_features()) + "), got " + shape_str(x.shape()));
  const Shape shape = x.shape();
  // (B, T, C) -> (B T, C): the tokens are BatchNorm1d's batch.
  return autograd::reshape(BatchNorm1d::forward(autograd::reshape(x, {shape[0] * shape[1], shape[2]})), shape);
}

TokenNoisyBatchNorm::TokenNoisyBatchNorm(int64_t num_features, uint64_t seed, DType dtype)
    : NoisyBatchNorm(num_features, false, seed, {}, dtype) {}

Tensor TokenNoisyBatchNorm::forward(const Tensor& x) {
  const Shape& shape = x.shape();
  if (x.dim() != 3 || shape[2] != num_features())
    throw Error("TokenNoisyBatchNorm(" + std::to_string(num_features()) + "): expected input of shape (B, T, " +
                std::to_string(num_features()) + "), got " + shape_str(shape));
  // (B, T, C) -> (B T, C): the tokens are the batch.
  return autograd::reshape(NoisyBatchNorm::forward(autograd::reshape(x, {shape[0] * shape[1], shape[2]})), shape);
}

// ---- TransformerMLP ----------------------------------------------------------------------------

TransformerMLP::TransformerMLP(int64_t width, Generator& gen, int64_t n_layer, DType dtype) {
  if (width < 1) throw Error("TransformerMLP: expected width >= 1, got " + std::to_string(width));
  if (n_layer < 1) throw Error("TransformerMLP: expected n_layer >= 1, got " + std::to_string(n_layer));
  c_fc_ = register_module("c_fc", std::make_shared<Linear>(width, 4 * width, gen));
  gelu_ = register_module("gelu", std::make_shared<GELU>());
  c_proj_ = register_module("c_proj", std::make_shared<Linear>(4 * width, width, gen));
  gpt_init_linear(*c_fc_, gen);
  gpt_init_linear(*c_proj_, gen, 0.02 / std::sqrt(2.0 * static_cast<double>(n_layer)));
  to(dtype);
}

Tensor TransformerMLP::forward(const Tensor& x) { return project((*c_fc_)(x), Tensor()); }

Tensor TransformerMLP::forward_add(const Tensor& x, const Tensor& residual) {
  if (has_forward_hooks()) return residual + (*this)(x);  // the hooks see the call
  return project((*c_fc_)(x), residual);
}

// [residual +] c_proj(gelu(h)): one autograd::gelu_linear, or the modules one by one when gelu or
// c_proj has a forward hook.
Tensor TransformerMLP::project(const Tensor& h, const Tensor& residual) {
  if (gelu_->has_forward_hooks() || c_proj_->has_forward_hooks()) {
    const Tensor y = (*c_proj_)((*gelu_)(h));
    return residual.defined() ? residual + y : y;
  }
  return autograd::gelu_linear(h, c_proj_->weight(), c_proj_->bias(), residual);
}

// ---- TransformerBlock -----------------------------------------------------------------------------

std::shared_ptr<Module> make_block_norm(BlockNorm norm, int64_t width, DType dtype, uint64_t seed) {
  switch (norm) {
    case BlockNorm::Layer: return std::make_shared<LayerNorm>(Shape{width}, 1e-5, true, true, dtype);
    case BlockNorm::RMS: return std::make_shared<RMSNorm>(Shape{width}, std::nullopt, true, dtype);
    case BlockNorm::Batch: return std::make_shared<TokenBatchNorm>(width, dtype);
    case BlockNorm::None: return std::make_shared<Identity>();
    case BlockNorm::NoisyBatch: return std::make_shared<TokenNoisyBatchNorm>(width, seed, dtype);
  }
  throw Error("TransformerBlock: unknown norm");
}

TransformerBlock::TransformerBlock(int64_t width, int64_t heads, BlockNorm norm, NormPosition position,
                                   Generator& gen, int64_t n_layer, DType dtype)
    : width_(width), norm_(norm), position_(position) {
  // nanoGPT's order: ln_1, attn, ln_2, mlp (the state_dict's order too). A noisy norm's seeds come
  // from a copy of gen: the weights are drawn as with any other norm.
  const uint64_t seed = Generator(gen).next_u64();
  ln_1_ = register_module("ln_1", make_block_norm(norm, width, dtype, seed));
  attn_ = register_module("attn", std::make_shared<CausalSelfAttention>(width, heads, gen, n_layer, dtype));
  ln_2_ = register_module("ln_2", make_block_norm(norm, width, dtype, seed ^ 0x94D049BB133111EBull));
  mlp_ = register_module("mlp", std::make_shared<TransformerMLP>(width, gen, n_layer, dtype));
}

Tensor TransformerBlock::forward(const Tensor& x) {
  if (x.dim() != 3 || x.size(2) != width_)
    throw Error("TransformerBlock(norm=" + block_norm_name(norm_) + ", position=" + norm_position_name(position_) +
                "): expected input of shape (B, T, " + std::to_string(width_) + "), got " +
                shape_str(x.shape()));
  Module &ln_1 = *ln_1_, &ln_2 = *ln_2_;
  // x + sublayer(...) with the add fused into the sublayers' output projections (the same values;
  // forward_add runs the modules one by one when a hook must see them).
  if (position_ == NormPosition::Pre) {
    const Tensor h = attn_->forward_add(ln_1(x), x);
    return mlp_->forward_add(ln_2(h), h);
  }
  const Tensor h = ln_1(attn_->forward_add(x, x));
  return ln_2(mlp_->forward_add(h, h));
}

}  // namespace normlab::nn
