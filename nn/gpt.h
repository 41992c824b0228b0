// GPT: nanoGPT's decoder-only language model (token and learned position embeddings, a stack of
// TransformerBlocks, a final norm and the head to the vocabulary) with a choice of norm and norm
// position, and its inference path: an incremental forward over a cache of keys and values, and a
// decoder that keeps the context within block_size tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/transformer.h"

namespace normlab::nn {

/// nanoGPT's GPTConfig (n_embd is called width here, as in TransformerBlock; no dropout, and every
/// Linear but lm_head has a bias, nanoGPT's bias=True).
struct GPTConfig {
  int64_t vocab_size = 0;  ///< V, token ids in [0, V)
  int64_t block_size = 0;  ///< the longest sequence: the number of learned positions (--block-size)
  int64_t n_layer = 1;  ///< transformer blocks
  int64_t n_head = 1;      ///< must divide width
  int64_t width = 0;       ///< C, nanoGPT's n_embd
  BlockNorm norm = BlockNorm::Layer;  ///< the blocks' normalization
  NormPosition position = NormPosition::Pre;  ///< pre-norm or post-norm blocks
};

/// The cache of keys and values that GPT::forward_cached reads and extends.
/// The keys and values of the tokens seen so far, for GPT::forward_cached: per layer, k[l] and v[l]
/// of shape (B, H, block_size, D) (D = width / n_head), allocated once by GPT::make_cache, positions
/// [0, length) filled; and the attention's scratch row of scores (block_size). The model's dtype.
struct GPTCache {
  int64_t batch = 0;  ///< B, the sequences
  int64_t length = 0;  ///< positions filled
  /// Per layer, the keys (B, H, block_size, D).
  std::vector<Tensor> k, v;  ///< per layer, the values (B, H, block_size, D)
  Tensor scores;  ///< the attention's scratch row (block_size)
};

/// nanoGPT's GPT: token and position embeddings, n_layer TransformerBlocks, a final norm, lm_head.
/// The model, for ids (B, T), T <= block_size:
///   x = wte(ids) + wpe(0..T-1)                     (B, T, C)
///   x = h.l(x)  for l = 0 .. n_layer-1               TransformerBlock(C, n_head, norm, position)
///   logits = lm_head(ln_f(x))                        (B, T, V)
/// ln_f is the blocks' norm (LayerNorm, RMSNorm, TokenBatchNorm, or Identity for none), under either
/// position (with post-norm it renormalizes the last block's output; kept so every configuration has
/// the same structure). lm_head = Linear(C, V, bias=false).
///
/// Untied: lm_head has its own weight, where nanoGPT ties it to wte's. Each parameter is then one
/// tensor with one name, so a safetensors checkpoint holds it once and the optimizer sees plain
/// parameters; the cost is V C more parameters. PyTorch side: nanoGPT's GPT with the line
/// `self.transformer.wte.weight = self.lm_head.weight` removed loads normlab's state_dict by name
/// (strict); nanoGPT's tied model loads it too (both names exist in its state_dict), but then wte and
/// lm_head share whichever of the two weights is loaded last.
///
/// state_dict names are nanoGPT's: transformer.wte.weight, transformer.wpe.weight,
/// `transformer.h.<l>.ln_1.weight`, `transformer.h.<l>.attn.c_attn.weight`, ... (TransformerBlock's),
/// transformer.ln_f.weight (and .bias for LayerNorm, the running statistics for batch), lm_head.weight.
/// (nanoGPT's blocks also carry a causal-mask buffer attn.bias when flash attention is unavailable,
/// PyTorch < 2.0; a state_dict with it has to drop those entries first.)
///
/// Init as nanoGPT's _init_weights: Linear weights N(0, 0.02), biases 0, embeddings N(0, 0.02), the
/// residual projections (attn.c_proj and mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)), norms 1 and 0.
///
/// With BlockNorm::Batch in training mode the model is not causal (TokenBatchNorm mixes every token's
/// statistics, later ones included); in eval mode it is, as with the other norms.
class GPT : public Module {
 public:
  /// Throws normlab::Error for a size < 1 or n_head not dividing width (naming the field).
  GPT(const GPTConfig& config, Generator& gen, DType dtype = DType::Float32);

  /// ids (flat, row-major) of shape (B, T) -> logits (B, T, V). T > block_size is an error naming
  /// both (and --block-size), a token id outside [0, vocab_size) one naming the id and its position.
  Tensor forward(const std::vector<int64_t>& ids, const Shape& shape);
  /// The same with the ids held in a (B, T) tensor of whole numbers (any float dtype).
  Tensor forward(const Tensor& ids) override;
  /// "GPT" (str() lists the children as PyTorch prints nanoGPT's model).
  std::string repr() const override { return "GPT"; }

  const GPTConfig& config() const { return config_; }  ///< The configuration given.

  // ---- Inference with a cache of keys and values ----------------------------------------------
  /// An empty cache (length 0) for `batch` sequences: 2 n_layer buffers of (batch, H, block_size, D)
  /// (forward_cached allocates nothing else but the tensors of the ops it runs).
  GPTCache make_cache(int64_t batch) const;
  /// Runs n new tokens per sequence against the cache and returns the last one's logits (B, V).
  /// The forward of n new tokens per sequence at positions [start, start + n), ids (B, n) flat
  /// row-major (B = cache.batch), attending to the cached keys and values of positions [0, start):
  /// writes the new tokens' keys and values into the cache, sets cache.length = start + n and returns
  /// the logits (B, V) of the last new token, equal to forward()'s logits at position start + n - 1 on
  /// the whole sequence. start may be below cache.length (the positions from start are rewritten: a
  /// shared prompt can be kept), not above; start + n must be <= block_size. Runs with grad mode off
  /// (nothing is recorded; the result does not require grad). Per layer the attention over the cache
  /// is a direct loop, o_i = sum_{j <= start+i} softmax_j(q_i . k_j / sqrt(D)) v_j; the other
  /// sublayers run on the n new tokens only (every norm is per token: with BlockNorm::Batch the model
  /// must be in eval mode, else an error).
  Tensor forward_cached(const std::vector<int64_t>& ids, int64_t n, int64_t start, GPTCache& cache);

  /// Throws unless ids (B, T) fill that shape with ids in [0, vocab_size) (`what` names the caller,
  /// the message the first id outside and its position).
  void check_ids(const std::vector<int64_t>& ids, const Shape& shape, const std::string& what) const;

 private:
  // x + wpe(positions [start, start + T)) for x = wte(ids), ids (B, T).
  Tensor embed(const std::vector<int64_t>& ids, const Shape& shape, int64_t start);
  // forward_cached's argument checks (the cache's buffers, the ids, start and n, eval mode).
  void check_cached_call(const std::vector<int64_t>& ids, int64_t n, int64_t start, const GPTCache& cache,
                         const std::string& what) const;
  // Block l on the new tokens x (B, n, C) at positions [start, start + n), attending over the cache.
  Tensor block_cached(size_t l, const Tensor& x, int64_t start, GPTCache& cache);

  GPTConfig config_;
  std::shared_ptr<Embedding> wte_, wpe_;
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;
  std::shared_ptr<Module> ln_f_;
  std::shared_ptr<Linear> lm_head_;
};

/// Generates text token by token with a GPT and its cache of keys and values.
/// Generation for a batch of sequences with GPT::forward_cached, keeping the context within
/// block_size tokens as nanoGPT's generate does (it feeds idx[:, -block_size:] each step):
///   while the context fits, the new tokens go through forward_cached at the next positions;
///   when it would exceed block_size, it is cropped to its last block_size tokens, which are fed
///   again from position 0 (the cache recomputed: learned positions shift with the crop).
/// So feed() returns exactly the logits of nanoGPT's generate for the next token at every length;
/// past block_size each new token costs a forward over block_size tokens (nanoGPT's cost at every
/// step), below it one token's forward. The model must stay alive and in eval mode (for batch).
class GPTDecoder {
 public:
  GPTDecoder(GPT& model, int64_t batch);  ///< A decoder of batch sequences on model (in eval mode).

  /// Appends n tokens to each sequence (ids (B, n) flat row-major, n >= 1) and returns the logits
  /// (B, V) of the next token.
  Tensor feed(const std::vector<int64_t>& ids, int64_t n);
  /// The context tokens the cache holds, (B, length()) flat row-major: the last <= block_size tokens.
  const std::vector<int64_t>& context() const { return context_; }
  int64_t length() const { return cache_.length; }  ///< Tokens in the context now.

 private:
  GPT& model_;
  GPTCache cache_;
  std::vector<int64_t> context_;
};

}  // namespace normlab::nn
