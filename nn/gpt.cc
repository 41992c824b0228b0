// GPT: construction with nanoGPT's names and init, the full forward, the incremental forward over
// the key/value cache (its attention loop written out here), and the decoder's context policy.
#include "nn/gpt.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/format.h"
#include "nn/activation.h"
#include "nn/init.h"
#include "nn/layernorm.h"
#include "nn/rmsnorm.h"

namespace normlab::nn {

using autograd::shape_str;

namespace {

// A named group of modules with no forward of its own: PyTorch's nn.ModuleDict ("transformer") and
// nn.ModuleList ("h"), so the names and the printed tree read as nanoGPT's.
class Container : public Module {
 public:
  explicit Container(std::string kind) : kind_(std::move(kind)) {}
  template <typename M>
  std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> m) {
    return register_module(name, std::move(m));
  }
  Tensor forward(const Tensor&) override { throw Error(kind_ + " of GPT: has no forward, call the GPT"); }
  std::string repr() const override { return kind_; }

 private:
  std::string kind_;
};

std::string config_str(const GPTConfig& c) {
  return "GPT(vocab_size=" + std::to_string(c.vocab_size) + ", block_size=" + std::to_string(c.block_size) +
         ", n_layer=" + std::to_string(c.n_layer) + ", n_head=" + std::to_string(c.n_head) +
         ", width=" + std::to_string(c.width) + ")";
}

// The children of a block, looked up once by their nanoGPT names.
struct BlockParts {
  Module *ln_1, *ln_2, *mlp;
  CausalSelfAttention* attn;
};

BlockParts parts(const TransformerBlock& b) {
  BlockParts p{nullptr, nullptr, nullptr, nullptr};
  for (const auto& [name, m] : b.children()) {
    if (name == "ln_1") p.ln_1 = m.get();
    if (name == "ln_2") p.ln_2 = m.get();
    if (name == "mlp") p.mlp = m.get();
    if (name == "attn") p.attn = dynamic_cast<CausalSelfAttention*>(m.get());
  }
  if (!p.ln_1 || !p.ln_2 || !p.mlp || !p.attn) throw Error("GPT: a TransformerBlock without ln_1, attn, ln_2, mlp");
  return p;
}

// Attention of n new tokens over the cache, one (b, h) at a time, with the kernels' formulas
// (autograd/kernels/attention.h, scalar reference order):
//   k, v of new token i (qkv[b, i, C + h D + d], qkv[b, i, 2C + h D + d]) -> kc, vc[b, h, start + i, d]
//   S_j = s q_i . k_j for j in [0, start + i],  m = max_j S_j,  e_j = exp(S_j - m),  l = sum_j e_j
//   y[b, i, h D + d] = (sum_j e_j v_j[d]) / l,  s = 1 / sqrt(D)
// qkv (B, n, 3C), kc and vc (B, H, Tmax, D), y (B, n, C), row: scratch of Tmax values.
template <typename T>
void cached_attention(const T* qkv, T* kc, T* vc, T* y, int64_t B, int64_t n, int64_t H, int64_t D, int64_t Tmax,
                      int64_t start, T* row) {
  const int64_t C = H * D;
  const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(D)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      T* kh = kc + (b * H + h) * Tmax * D;
      T* vh = vc + (b * H + h) * Tmax * D;
      for (int64_t i = 0; i < n; ++i) {
        const T* src = qkv + (b * n + i) * 3 * C + h * D;
        std::copy(src + C, src + C + D, kh + (start + i) * D);
        std::copy(src + 2 * C, src + 2 * C + D, vh + (start + i) * D);
      }
      for (int64_t i = 0; i < n; ++i) {
        const T* qi = qkv + (b * n + i) * 3 * C + h * D;
        const int64_t len = start + i + 1;
        T m = -INFINITY;
        for (int64_t j = 0; j < len; ++j) {
          T acc = 0;
          for (int64_t d = 0; d < D; ++d) acc += qi[d] * kh[j * D + d];
          row[j] = acc * scale;
          m = std::max(m, row[j]);
        }
        T l = 0;
        for (int64_t j = 0; j < len; ++j) {
          row[j] = std::exp(row[j] - m);
          l += row[j];
        }
        T* yi = y + (b * n + i) * C + h * D;
        std::fill(yi, yi + D, T(0));
        for (int64_t j = 0; j < len; ++j)
          for (int64_t d = 0; d < D; ++d) yi[d] += row[j] * vh[j * D + d];
        const T inv_l = 1 / l;
        for (int64_t d = 0; d < D; ++d) yi[d] *= inv_l;
      }
    }
}

}  // namespace

// ---- Construction -------------------------------------------------------------------------------

GPT::GPT(const GPTConfig& config, Generator& gen, DType dtype) : config_(config) {
  const GPTConfig& c = config;
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
                                    {"block_size", c.block_size}, {"n_layer", c.n_layer}, {"n_head", c.n_head},
                                    {"width", c.width}})
    if (value < 1) throw Error(config_str(c) + ": expected " + name + " >= 1, got " + std::to_string(value));
  if (c.width % c.n_head != 0)
    throw Error(config_str(c) + ": width=" + std::to_string(c.width) + " is not divisible by n_head=" +
                std::to_string(c.n_head));
  // nanoGPT's order: transformer (wte, wpe, h, ln_f), then lm_head.
  auto transformer = register_module("transformer", std::make_shared<Container>("ModuleDict"));
  wte_ = transformer->add("wte", std::make_shared<Embedding>(c.vocab_size, c.width, gen, dtype));
  wpe_ = transformer->add("wpe", std::make_shared<Embedding>(c.block_size, c.width, gen, dtype));
  init::normal_(wte_->weight(), 0, 0.02, gen);
  init::normal_(wpe_->weight(), 0, 0.02, gen);
  auto h = transformer->add("h", std::make_shared<Container>("ModuleList"));
  for (int64_t l = 0; l < c.n_layer; ++l)
    blocks_.push_back(h->add(std::to_string(l), std::make_shared<TransformerBlock>(
                                                    c.width, c.n_head, c.norm, c.position, gen, c.n_layer, dtype)));
  ln_f_ = transformer->add("ln_f", make_block_norm(c.norm, c.width, dtype, Generator(gen).next_u64()));
  lm_head_ = register_module("lm_head", std::make_shared<Linear>(c.width, c.vocab_size, gen, false));
  gpt_init_linear(*lm_head_, gen);
  to(dtype);
}

// ---- Full forward -------------------------------------------------------------------------------

void GPT::check_ids(const std::vector<int64_t>& ids, const Shape& shape, const std::string& what) const {
  if (shape.size() != 2)
    throw Error(what + ": expected token ids of shape (B, T), got shape " + shape_str(shape));
  if (shape[0] < 1 || shape[1] < 1)
    throw Error(what + ": expected at least one sequence of at least one token, got shape " + shape_str(shape));
  if (static_cast<int64_t>(ids.size()) != shape[0] * shape[1])
    throw Error(what + ": " + std::to_string(ids.size()) + " token ids do not fill shape " + shape_str(shape));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= config_.vocab_size)
      throw Error(what + ": token id " + std::to_string(ids[i]) + " at position " +
                  autograd::py_tuple(autograd::unravel_index(static_cast<int64_t>(i), shape)) + " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
}

Tensor GPT::embed(const std::vector<int64_t>& ids, const Shape& shape, int64_t start) {
  std::vector<int64_t> pos(static_cast<size_t>(shape[1]));
  for (size_t t = 0; t < pos.size(); ++t) pos[t] = start + static_cast<int64_t>(t);
  // (B, T, C) + (T, C), broadcast over the batch.
  return wte_->forward(ids, shape) + wpe_->forward(pos, {shape[1]});
}

Tensor GPT::forward(const std::vector<int64_t>& ids, const Shape& shape) {
  check_ids(ids, shape, config_str(config_));
  if (shape[1] > config_.block_size)
    throw Error(config_str(config_) + ": a sequence of T=" + std::to_string(shape[1]) +
                " tokens is longer than block_size=" + std::to_string(config_.block_size) +
                " (--block-size), the number of learned positions");
  Tensor x = embed(ids, shape, 0);
  for (const auto& b : blocks_) x = (*b)(x);
  return (*lm_head_)((*ln_f_)(x));
}

Tensor GPT::forward(const Tensor& ids) {
  std::vector<int64_t> v(static_cast<size_t>(ids.numel()));
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const double x = ids.flat(i);
    if (!std::isfinite(x) || std::floor(x) != x || std::fabs(x) >= 0x1p62)
      throw Error(config_str(config_) + ": expected token ids that are whole numbers, got " + base::py_float(x) +
                  " at flat position " + std::to_string(i));
    v[static_cast<size_t>(i)] = static_cast<int64_t>(x);
  }
  return forward(v, ids.shape());
}

// ---- Incremental forward ------------------------------------------------------------------------

GPTCache GPT::make_cache(int64_t batch) const {
  if (batch < 1) throw Error(config_str(config_) + ": expected a cache for batch >= 1, got " + std::to_string(batch));
  const DType dtype = lm_head_->weight().dtype();
  const int64_t H = config_.n_head, D = config_.width / H;
  GPTCache cache;
  cache.batch = batch;
  cache.scores = autograd::zeros({config_.block_size}, dtype);
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    cache.k.push_back(autograd::zeros({batch, H, config_.block_size, D}, dtype));
    cache.v.push_back(autograd::zeros({batch, H, config_.block_size, D}, dtype));
  }
  return cache;
}

void GPT::check_cached_call(const std::vector<int64_t>& ids, int64_t n, int64_t start, const GPTCache& cache,
                            const std::string& what) const {
  const int64_t B = cache.batch, H = config_.n_head, D = config_.width / H, Tmax = config_.block_size;
  const DType dtype = lm_head_->weight().dtype();
  if (static_cast<int64_t>(cache.k.size()) != config_.n_layer || cache.k.size() != cache.v.size() || B < 1)
    throw Error(what + ": expected a cache from make_cache (" + std::to_string(config_.n_layer) +
                " layers), got one of " + std::to_string(cache.k.size()) + " layers for batch " + std::to_string(B));
  if (!cache.scores.defined() || cache.scores.shape() != Shape{Tmax} || cache.scores.dtype() != dtype)
    throw Error(what + ": expected the cache's scores of shape " + shape_str({Tmax}) + " and dtype " +
                autograd::dtype_name(dtype) + " (from make_cache)");
  for (size_t l = 0; l < cache.k.size(); ++l)
    for (const Tensor* t : {&cache.k[l], &cache.v[l]})
      if (!t->defined() || t->shape() != Shape{B, H, Tmax, D} || t->dtype() != dtype)
        throw Error(what + ": expected cache buffers of shape " + shape_str({B, H, Tmax, D}) + " and dtype " +
                    autograd::dtype_name(dtype) + " (from make_cache), got layer " + std::to_string(l) + "'s " +
                    (t->defined() ? shape_str(t->shape()) + " " + autograd::dtype_name(t->dtype()) : "undefined"));
  if (n < 1) throw Error(what + ": expected n >= 1 new tokens per sequence, got n=" + std::to_string(n));
  check_ids(ids, {B, n}, what);
  if (start < 0 || start > cache.length)
    throw Error(what + ": start=" + std::to_string(start) + " must be in [0, " + std::to_string(cache.length) +
                "], the cache's length (positions before start must be cached)");
  if (start + n > Tmax)
    throw Error(what + ": positions [" + std::to_string(start) + ", " + std::to_string(start + n) +
                ") go beyond block_size=" + std::to_string(Tmax) +
                " (--block-size): crop the context first (GPTDecoder does)");
  if (has_batch_statistics(config_.norm) && is_training())
    throw Error(what + ": with a BatchNorm (batch, noisybatch) the model must be in eval mode (in training mode the batch "
                "statistics mix every token of the sequence, which the cache cannot)");
}

Tensor GPT::block_cached(size_t l, const Tensor& x, int64_t start, GPTCache& cache) {
  const int64_t B = x.size(0), n = x.size(1), C = config_.width, H = config_.n_head, D = C / H;
  const BlockParts p = parts(*blocks_[l]);
  const auto attend = [&](const Tensor& a) {
    const Tensor qkv = (*p.attn->c_attn())(a);  // (B, n, 3C)
    Tensor y = autograd::empty({B, n, C}, x.dtype());
    autograd::dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      cached_attention(qkv.data<T>(), cache.k[l].data<T>(), cache.v[l].data<T>(), y.data<T>(), B, n, H, D,
                       config_.block_size, start, cache.scores.data<T>());
    });
    return (*p.attn->c_proj())(y);
  };
  // TransformerBlock::forward with the attention over the cache.
  if (config_.position == NormPosition::Pre) {
    const Tensor h = x + attend((*p.ln_1)(x));
    return h + (*p.mlp)((*p.ln_2)(h));
  }
  const Tensor h = (*p.ln_1)(x + attend(x));
  return (*p.ln_2)(h + (*p.mlp)(h));
}

Tensor GPT::forward_cached(const std::vector<int64_t>& ids, int64_t n, int64_t start, GPTCache& cache) {
  check_cached_call(ids, n, start, cache, config_str(config_) + ".forward_cached");
  autograd::NoGradGuard no_grad;
  const int64_t B = cache.batch;
  Tensor x = embed(ids, {B, n}, start);  // (B, n, C)
  for (size_t l = 0; l < blocks_.size(); ++l) x = block_cached(l, x, start, cache);
  cache.length = start + n;
  // Only the last token's logits: (B, 1, C) -> (B, 1, V) -> (B, V).
  const Tensor last = autograd::narrow(x, 1, n - 1, 1);
  return autograd::reshape((*lm_head_)((*ln_f_)(last)), {B, config_.vocab_size});
}

// ---- Decoder --------------------------------------------------------------------------------------

GPTDecoder::GPTDecoder(GPT& model, int64_t batch) : model_(model), cache_(model.make_cache(batch)) {}

Tensor GPTDecoder::feed(const std::vector<int64_t>& ids, int64_t n) {
  const int64_t B = cache_.batch, L = cache_.length, Tmax = model_.config().block_size;
  if (n < 1 || static_cast<int64_t>(ids.size()) != B * n)
    throw Error("GPTDecoder: expected n >= 1 and " + std::to_string(B) + " x n token ids, got n=" +
                std::to_string(n) + " and " + std::to_string(ids.size()) + " ids");
  model_.check_ids(ids, {B, n}, "GPTDecoder");  // all of them, also those a crop drops
  if (L + n <= Tmax) {
    Tensor logits = model_.forward_cached(ids, n, L, cache_);
    std::vector<int64_t> next(static_cast<size_t>(B * (L + n)));
    for (int64_t b = 0; b < B; ++b) {
      std::copy(context_.begin() + b * L, context_.begin() + (b + 1) * L, next.begin() + b * (L + n));
      std::copy(ids.begin() + b * n, ids.begin() + (b + 1) * n, next.begin() + b * (L + n) + L);
    }
    context_ = std::move(next);
    return logits;
  }
  // Crop: the last block_size tokens of context + ids, fed again from position 0.
  std::vector<int64_t> next(static_cast<size_t>(B * Tmax));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < Tmax; ++t) {
      const int64_t src = L + n - Tmax + t;  // index in row b of context + ids
      next[static_cast<size_t>(b * Tmax + t)] = src < L ? context_[static_cast<size_t>(b * L + src)]
                                                        : ids[static_cast<size_t>(b * n + src - L)];
    }
  Tensor logits = model_.forward_cached(next, Tmax, 0, cache_);
  context_ = std::move(next);
  return logits;
}

}  // namespace normlab::nn
