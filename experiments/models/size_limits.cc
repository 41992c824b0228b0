// The size limits of the models, checked before allocating (size_limits.h).
#include "experiments/models/size_limits.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"

namespace normlab::experiments {

std::string value_count(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 1e9 ? "%.0f" : "%.3g", v);
  return buf;
}

void check_values(const std::string& flags, const std::string& what, const std::string& formula, double values,
                  double most, const std::string& scope, const std::string& fix) {
  if (values <= most) return;
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.3g GiB", values * 4 / double(int64_t{1} << 30));
  throw Error(flags + ": " + what + " would be " + formula + " = " + value_count(values) + " values (" + gib +
              " of float32), more than the " + value_count(most) + " " + scope + " may hold here; give " + fix);
}

namespace {

std::string n(int64_t v) { return std::to_string(v); }

// The largest layer of an LSTM of `layers` layers of `hidden` units on `features` inputs: 4H (I + H)
// weights, I the features for the first layer, H for the others.
void check_lstm_weights(int64_t features, int64_t hidden, int64_t layers, const std::string& flag = "--hidden") {
  const int64_t in = layers > 1 ? std::max(features, hidden) : features;
  check_values(flag + " " + n(hidden), "an LSTM layer's weights", "4 x " + n(hidden) + " x (" + n(in) + " + " + n(hidden) + ")",
               4 * double(hidden) * (double(in) + double(hidden)), kMaxWeights, "a layer", "a smaller " + flag);
}

}  // namespace

// GPT: a block's weights 12 W^2 (+ biases), the embeddings V W and T W; per sample and block about
// 16 T W activations saved for the backward pass (attention's q, k, v and output, the MLP's 4 W
// hidden, the norms, residuals) and heads T^2 attention probabilities; per batch B T of those in
// every block, and the logits B T V (with their softmax and gradient).
void check_char_model_size(const CharModelSpec& s, int64_t batch, const CharModelFlags& f) {
  const double T = double(s.block_size), B = double(batch), V = double(s.vocab_size);
  const std::string block = f.block + " " + n(s.block_size);
  if (s.arch == "gpt") {
    const nn::GPTConfig& g = s.gpt;
    const double W = double(g.width), L = double(g.n_layer), H = double(g.n_head);
    const std::string width = f.width + " " + n(g.width);
    check_values(width, "a block's weights", "12 x " + n(g.width) + "^2", 12 * W * W, kMaxWeights, "a layer",
                 "a smaller " + f.width);
    check_values(block + " with " + width + " and " + f.heads + " " + n(g.n_head),
                 "one window's activations in a block", "16 x " + n(s.block_size) + " x " + n(g.width) + " + " +
                 n(g.n_head) + " x " + n(s.block_size) + "^2", 16 * T * W + H * T * T, kMaxActivations, "a sample",
                 "a smaller " + f.block + " or " + f.width);
    check_values(f.batch + " " + n(batch) + " with " + block + ", " + f.layers + " " + n(g.n_layer),
                 "one batch's activations", n(batch) + " x (" + n(g.n_layer) + " x (16 x " + n(s.block_size) + " x " +
                 n(g.width) + " + " + n(g.n_head) + " x " + n(s.block_size) + "^2) + 3 x " + n(s.block_size) + " x " +
                 n(s.vocab_size) + ")", B * (L * (16 * T * W + H * T * T) + 3 * T * V), kMaxBatchValues, "a batch",
                 "a smaller " + f.batch + " or " + f.block);
    return;
  }
  const nn::CharLSTMConfig& l = s.lstm;
  const double E = double(l.embed_dim), Hd = double(l.hidden_size), L = double(l.num_layers);
  check_lstm_weights(l.embed_dim, l.hidden_size, l.num_layers, f.hidden);
  check_values(f.width + " " + n(l.embed_dim), "the embedding", n(s.vocab_size) + " x " + n(l.embed_dim), V * E, kMaxWeights,
               "a layer", "a smaller " + f.width);
  check_values(f.batch + " " + n(batch) + " with " + block + ", " + f.hidden + " " + n(l.hidden_size),
               "one batch's activations", n(batch) + " x " + n(s.block_size) + " x (" + n(l.num_layers) + " x 6 x " +
               n(l.hidden_size) + " + 3 x " + n(s.vocab_size) + ")", B * T * (L * 6 * Hd + 3 * V), kMaxBatchValues,
               "a batch", "a smaller " + f.batch + " or " + f.block);
}

// An LSTM layer's weights 4H (I + H); per sample about 6 H values per step and layer (the gates
// and states kept for the backward pass).
void check_lstm_size(int64_t features, int64_t hidden, int64_t layers, int64_t steps) {
  check_lstm_weights(features, hidden, layers);
  check_values("--hidden " + n(hidden), "one sample's activations", n(steps) + " steps x " + n(layers) +
               " layers x 6 x " + n(hidden), double(steps) * double(layers) * 6 * double(hidden), kMaxActivations, "a sample",
               "a smaller --hidden");
}

}  // namespace normlab::experiments
