// LayerNormLSTM: the layer-normalized LSTM of Ba, Kiros and Hinton (2016), multi-layer, with
// nn::LSTM's interface, gate order (i, f, g, o) and init.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/layernorm.h"
#include "nn/lstm.h"
#include "nn/module.h"

namespace normlab::nn {

/// LayerNormLSTM's options.
struct LayerNormLSTMOptions {
  int64_t num_layers = 1;  ///< stacked layers
  bool batch_first = false;  ///< input and output (B, T, *) instead of (T, B, *)
  double eps = 1e-5;         ///< of the three LayerNorms
  DType dtype = DType::Float32;  ///< the parameters' dtype
};

/// An LSTM with LayerNorm on both gate projections and on the cell state.
/// For each layer k and step t (x_t the input or layer k-1's h_t, H = hidden_size):
///   G = LN_ih(x_t W_ih^T) + LN_hh(h_{t-1} W_hh^T) + b        (B, 4H), blocks [i | f | g | o]
///   c_t = sigmoid(G_f) c_{t-1} + sigmoid(G_i) tanh(G_g)
///   h_t = sigmoid(G_o) tanh(LN_c(c_t))
/// LN_ih and LN_hh normalize each sample's whole 4H vector, with a gain and no shift; LN_c normalizes
/// the H cells with a gain and a shift. The paper's LN_ih and LN_hh also have shifts beta_1, beta_2
/// besides b: only the sum beta_1 + beta_2 + b enters G, so the one bias b stands for all three
/// (the same function class, 8H fewer parameters per layer).
/// Parameters of layer k: weight_ih_l{k} (4H, input_size or H), weight_hh_l{k} (4H, H), bias_l{k}
/// (4H), drawn in that order as nn::LSTM's, U(-1/sqrt(H), 1/sqrt(H)); then the LayerNorm children
/// ln_ih_l{k} and ln_hh_l{k} (weight (4H), init 1) and ln_c_l{k} (weight (H), init 1, bias (H),
/// init 0). The input projections of all T steps are one GEMM and one LayerNorm per layer; the steps
/// are one op (autograd::ln_lstm_recurrence: per step the hidden GEMM, its LayerNorm, the gates, LN_c
/// and the output, parts of the batch's rows on their own threads).
class LayerNormLSTM : public Module {
 public:
  LayerNormLSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const LayerNormLSTMOptions& o = {});  ///< Parameters drawn from gen (see the class); throws for sizes below 1.

  /// x (B, T, input_size) batch_first or (T, B, input_size) -> the output sequence.
  Tensor forward(const Tensor& x) override;
  /// The output sequence and the last states (as nn::LSTM's); h0, c0 (num_layers, B, H) or undefined
  /// (zeros).
  LSTMOutput forward_with_state(const Tensor& x, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor());
  /// "LayerNormLSTM(28, 128, batch_first=True)" (num_layers, eps when not the default).
  std::string repr() const override;

  int64_t input_size() const { return input_size_; }  ///< Features per input step.
  int64_t hidden_size() const { return hidden_size_; }  ///< H, the hidden state size.
  const LayerNormLSTMOptions& options() const { return o_; }  ///< The options given.

 private:
  struct Layer {
    Tensor w_ih, w_hh, b;
    std::shared_ptr<LayerNorm> ln_ih, ln_hh, ln_c;
  };
  int64_t input_size_, hidden_size_;
  LayerNormLSTMOptions o_;
  std::vector<Layer> layers_;
};

}  // namespace normlab::nn
