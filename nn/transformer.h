// TransformerBlock: nanoGPT's GPT block (attention and MLP sublayers with residual connections) with
// a choice of normalization (LayerNorm, RMSNorm, BatchNorm over tokens, none) and of its position
// (pre-norm as GPT-2, post-norm as the original Transformer), and its MLP.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nn/attention.h"
#include "nn/batchnorm.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/noisy_batchnorm.h"

namespace normlab::nn {

/// The normalization of a block's ln_1 and ln_2, each over the C features of a token.
///   Layer: LayerNorm(C) (eps 1e-5), weight and bias;
///   RMS:   RMSNorm(C) (eps: the dtype's machine epsilon, PyTorch's default), weight;
///   Batch: TokenBatchNorm(C), BatchNorm over the B x T tokens, weight, bias and running statistics;
///   None:  Identity, no parameters;
///   NoisyBatch: TokenNoisyBatchNorm(C), TokenBatchNorm with NoisyBatchNorm's random per-feature
///          scale and shift at every training step (the control of "stable input distributions").
enum class BlockNorm { Layer, RMS, Batch, None, NoisyBatch };
/// Whether the norm normalizes with batch statistics (Batch, NoisyBatch): not causal in training mode.
bool has_batch_statistics(BlockNorm norm);
/// Pre: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))   (GPT-2, nanoGPT)
/// Post: x = ln_1(x + attn(x)); x = ln_2(x + mlp(x))  (the original Transformer)
enum class NormPosition { Pre, Post };

/// "layer", "rms", "batch", "none", "noisybatch"; "pre", "post". The parse functions throw normlab::Error naming
/// the accepted words for anything else.
std::string block_norm_name(BlockNorm norm);
BlockNorm parse_block_norm(const std::string& name);  ///< The BlockNorm named name.
std::string norm_position_name(NormPosition position);  ///< The name of position.
NormPosition parse_norm_position(const std::string& name);  ///< The NormPosition named name.

/// BatchNorm1d(C) over the tokens of x (B, T, C). x is viewed as (B T, C), each feature normalized
/// with the mean and variance of its B T values, and viewed back (the naive BatchNorm of NLP).
/// In training mode the statistics mix every token of the batch, later positions included: an
/// earlier position's output then depends on later tokens, which a causal language model must not
/// see (the model can learn to read the future through the batch statistics, and does worse at
/// generation, where there is no future to average over). In eval mode the running statistics are
/// fixed numbers and each token is normalized on its own. Its state_dict is BatchNorm1d's (weight,
/// bias, running_mean, running_var, num_batches_tracked).
class TokenBatchNorm : public BatchNorm1d {
 public:
  explicit TokenBatchNorm(int64_t num_features, DType dtype = DType::Float32);  ///< BatchNorm1d(num_features) over the tokens.
  /// x (B, T, C) -> (B, T, C).
  Tensor forward(const Tensor& x) override;
};

/// NoisyBatchNorm(C) over the tokens of x (B, T, C), as TokenBatchNorm: each training forward
/// draws one scale and one shift per feature, the same for every token of the batch.
class TokenNoisyBatchNorm : public NoisyBatchNorm {
 public:
  TokenNoisyBatchNorm(int64_t num_features, uint64_t seed, DType dtype = DType::Float32);  ///< noise seeded by seed
  /// x (B, T, C) -> (B, T, C).
  Tensor forward(const Tensor& x) override;
};

/// A block's norm over the C features of a token (ln_1, ln_2, and the GPT's ln_f); seed: the noise's
/// (NoisyBatch only).
std::shared_ptr<Module> make_block_norm(BlockNorm norm, int64_t width, DType dtype, uint64_t seed);

/// nanoGPT's MLP (printed "MLP"): x (*, C) -> c_proj(gelu(c_fc(x))), c_fc = Linear(C, 4C), c_proj = Linear(4C, C).
/// GELU is normlab's (nn::GELU: the tanh approximation, GPT-2's; nanoGPT's nn.GELU() is the exact erf
/// form, which normlab does not have). Init as nanoGPT: weights N(0, 0.02), c_proj's
/// N(0, 0.02 / sqrt(2 n_layer)), biases 0.
class TransformerMLP : public Module {
 public:
  TransformerMLP(int64_t width, Generator& gen, int64_t n_layer = 1, DType dtype = DType::Float32);  ///< c_fc and c_proj drawn from gen (n_layer: see TransformerBlock).
  Tensor forward(const Tensor& x) override;
  /// residual + forward(x) (residual of x's shape), as one autograd::gelu_linear for gelu and c_proj:
  /// c_proj's product adds the residual, and its backward's product multiplies by gelu'(h). Through
  /// the modules one by one when this module, gelu or c_proj has a forward hook.
  Tensor forward_add(const Tensor& x, const Tensor& residual);
  std::string repr() const override { return "MLP"; }

 private:
  Tensor project(const Tensor& h, const Tensor& residual);
  std::shared_ptr<Linear> c_fc_, c_proj_;
  std::shared_ptr<Module> gelu_;
};

/// A GPT block: attention and MLP sublayers with residual connections, pre-norm or post-norm.
/// One GPT block on x (B, T, C), C = width, `heads` attention heads (heads must divide width):
/// children ln_1, attn (CausalSelfAttention), ln_2, mlp (TransformerMLP), so state_dict names read
/// as nanoGPT's (ln_1.weight, attn.c_attn.weight, mlp.c_fc.weight, ...). n_layer is the depth of the model the
/// block belongs to, for the init of the residual projections (N(0, 0.02 / sqrt(2 n_layer))).
/// With BlockNorm::Batch in training mode, an earlier position's output depends on later tokens
/// (see TokenBatchNorm): the block is causal only in eval mode, or with the other norms.
class TransformerBlock : public Module {
 public:
  /// The children drawn from gen; throws for width < 1, heads < 1 or heads not dividing width.
  TransformerBlock(int64_t width, int64_t heads, BlockNorm norm, NormPosition position, Generator& gen,
                   int64_t n_layer = 1, DType dtype = DType::Float32);

  /// x (B, T, C) -> (B, T, C).
  Tensor forward(const Tensor& x) override;
  /// "TransformerBlock" (str() lists the children).
  std::string repr() const override { return "TransformerBlock"; }

  BlockNorm norm() const { return norm_; }  ///< The normalization of ln_1 and ln_2.
  NormPosition position() const { return position_; }  ///< Pre-norm or post-norm.

 private:
  int64_t width_;
  BlockNorm norm_;
  NormPosition position_;
  std::shared_ptr<Module> ln_1_, ln_2_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<TransformerMLP> mlp_;
};

}  // namespace normlab::nn
