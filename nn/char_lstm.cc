// CharLSTM: construction (PyTorch's default inits and names), the id checks and the forward.
#include "nn/char_lstm.h"

#include <cmath>
#include <utility>

#include "base/format.h"

namespace normlab::nn {

namespace {

std::string config_str(const CharLSTMConfig& c) {
  return "CharLSTM(vocab_size=" + std::to_string(c.vocab_size) + ", embed_dim=" + std::to_string(c.embed_dim) +
         ", hidden_size=" + std::to_string(c.hidden_size) + ", num_layers=" + std::to_string(c.num_layers) + ")";
}

}  // namespace

CharLSTM::CharLSTM(const CharLSTMConfig& config, Generator& gen, DType dtype) : config_(config) {
  const CharLSTMConfig& c = config;
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
                                    {"embed_dim", c.embed_dim}, {"hidden_size", c.hidden_size},
                                    {"num_layers", c.num_layers}})
    if (value < 1) throw Error(config_str(c) + ": expected " + name + " >= 1, got " + std::to_string(value));
  embedding_ = register_module("embedding", std::make_shared<Embedding>(c.vocab_size, c.embed_dim, gen, dtype));
  LSTMOptions o;
  o.num_layers = c.num_layers;
  o.batch_first = true;
  o.dtype = dtype;
  lstm_ = register_module("lstm", std::make_shared<LSTM>(c.embed_dim, c.hidden_size, gen, o));
  head_ = register_module("head", std::make_shared<Linear>(c.hidden_size, c.vocab_size, gen));
  to(dtype);
}

CharLSTMOutput CharLSTM::forward_with_state(const std::vector<int64_t>& ids, const Shape& shape, const Tensor& h0,
                                            const Tensor& c0) {
  const std::string what = config_str(config_);
  if (shape.size() != 2 || shape[0] < 1 || shape[1] < 1)
    throw Error(what + ": expected token ids of shape (B, T) with B, T >= 1, got shape " + autograd::shape_str(shape));
  if (static_cast<int64_t>(ids.size()) != shape[0] * shape[1])
    throw Error(what + ": " + std::to_string(ids.size()) + " token ids do not fill shape " +
                autograd::shape_str(shape));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= config_.vocab_size) {
      const int64_t k = static_cast<int64_t>(i);
      throw Error(what + ": token id " + std::to_string(ids[i]) + " at position (" + std::to_string(k / shape[1]) +
                  ", " + std::to_string(k % shape[1]) + ") is outside the vocabulary [0, " +
                  std::to_string(config_.vocab_size) + ")");
    }
  const LSTMOutput out = lstm_->forward_with_state(embedding_->forward(ids, shape), h0, c0);
  return {(*head_)(out.output), out.h_n, out.c_n};
}

Tensor CharLSTM::forward(const std::vector<int64_t>& ids, const Shape& shape) {
  return forward_with_state(ids, shape).logits;
}

Tensor CharLSTM::forward(const Tensor& ids) {
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

}  // namespace normlab::nn
