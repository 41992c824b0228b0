// BatchNormLSTM: the recurrent batch-normalized LSTM of Cooijmans et al. (2016), multi-layer, with
// nn::LSTM's interface and gate order (i, f, g, o); statistics per time step or shared by all steps.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <optional>

#include "nn/lstm.h"
#include "nn/module.h"
#include "nn/noisy_batchnorm.h"

namespace normlab::nn {

/// BatchNorm over the C features of (B, C) rows with running statistics kept per time step: slot s
/// of running_mean and running_var (slots, C) (zeros and ones at first). weight (C) starts at
/// gamma_init, bias (C) (when shift) at 0. A part of BatchNormLSTM (its children bn_ih_l{k}, ...).
class StepBatchNorm : public Module {
 public:
  StepBatchNorm(int64_t num_features, int64_t slots, bool shift, double gamma_init, DType dtype);  ///< slots: the running statistics kept (one per step); shift: whether there is a bias; gamma_init: the start of weight.
  /// x (B, C): training normalizes with the batch's mean and biased variance and updates slot's
  /// running statistics (PyTorch's BatchNorm1d rule, momentum f: r = (1 - f) r + f stat, the
  /// unbiased variance); eval normalizes with slot's running statistics.
  Tensor forward_step(const Tensor& x, int64_t slot, double momentum, double eps);
  /// forward_step(x, 0, 0.1, 1e-5).
  Tensor forward(const Tensor& x) override;
  /// Population statistics (precise BN): puts zeros and ones in every slot's running statistics.
  void reset_running_stats();
  /// Turns cumulative statistics on or off: while on, the k-th training update of a slot since it was
  /// turned on uses momentum 1 / k instead of the one given, so that the slot holds the plain average
  /// of the statistics of its updates (PyTorch's momentum=None); off: the given momentum again.
  void set_cumulative(bool on);
  /// "StepBatchNorm(16, slots=100)".
  std::string repr() const override;
  const Tensor& weight() const { return weight_; }  ///< The gain, (C).
  const Tensor& bias() const { return bias_; }  ///< The shift, (C) (undefined without shift).

 private:
  int64_t num_features_, slots_;
  Tensor weight_, bias_, running_mean_, running_var_;
  bool cumulative_ = false;
  std::vector<int64_t> updates_;  // per slot: training updates since set_cumulative(true)
};

/// BatchNormLSTM's options.
struct BatchNormLSTMOptions {
  int64_t num_layers = 1;  ///< stacked layers
  bool batch_first = false;  ///< input and output (B, T, *) instead of (T, B, *)
  int64_t max_steps = 100;   ///< slots of per-step statistics (steps beyond share the last slot)
  bool shared_statistics = false;  ///< one slot for every step (the variant without per-step statistics)
  double momentum = 0.1;  ///< the running statistics' update factor
  double eps = 1e-5;  ///< added to the variances
  double gamma_init = 0.1;  ///< the BN gains' start (1 saturates the gates, the paper says)
  DType dtype = DType::Float32;  ///< the parameters' dtype
  /// The noisy variant (NoisyBatchNorm's control, for the recurrent cell): each of the three
  /// BatchNorms' outputs, per unit, times a scale and plus a shift drawn from these distributions
  /// anew at every training forward (the same at every time step of it), their expectations in
  /// eval. Unset: no noise.
  std::optional<NoiseOptions> noise;
  uint64_t noise_seed = 0;  ///< the noise's seed (step k's draws are a function of it and k alone)
};

/// An LSTM with BatchNorm on both gate projections and on the cell state, statistics per time step.
/// For each layer k and step t (x_t the input or layer k-1's h_t, H = hidden_size):
///   G = BN_ih(x_t W_ih^T) + BN_hh(h_{t-1} W_hh^T) + b      (B, 4H), blocks [i | f | g | o]
///   c_t = sigmoid(G_f) c_{t-1} + sigmoid(G_i) tanh(G_g)
///   h_t = sigmoid(G_o) tanh(BN_c(c_t))
/// BN_ih and BN_hh have gains and no shift (b provides it), BN_c a gain and a shift. Step t uses the
/// statistics slot min(t, max_steps - 1) (slot 0 with shared_statistics). Training normalizes each
/// step with its batch's statistics (over B, so B >= 2) and updates that slot; the buffer
/// trained_steps records the longest sequence trained on (up to the slots), and eval reads slot
/// min(t, trained_steps - 1, slots - 1): steps beyond the longest training length use the last
/// trained step's statistics. h_0 = c_0 = 0 unless given (BN_hh of a zero h is still computed, so
/// the zero start's statistics are kept like any other step's).
/// Parameters of layer k: weight_ih_l{k} (4H, input_size or H), weight_hh_l{k} (4H, H), bias_l{k}
/// (4H), U(-1/sqrt(H), 1/sqrt(H)) in that order as nn::LSTM's; then the children bn_ih_l{k},
/// bn_hh_l{k} (weight (4H)) and bn_c_l{k} (weight, bias (H)), each with running_mean and
/// running_var (slots, C). With options.noise, BN_ih(.), BN_hh(.) and BN_c(.) above are each
/// s BN(.) + m with that BatchNorm's noise of the step (NoisyBatchNorm's rule), and one more buffer,
/// noise_step (rank 0): the noisy training forwards so far.
class BatchNormLSTM : public Module {
 public:
  BatchNormLSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const BatchNormLSTMOptions& o = {});  ///< Parameters drawn from gen (see the class); throws for sizes below 1.

  /// x (B, T, input_size) batch_first or (T, B, input_size) -> the output sequence.
  Tensor forward(const Tensor& x) override;
  /// The output sequence and the last states (as nn::LSTM's); h0, c0 (num_layers, B, H) or undefined.
  LSTMOutput forward_with_state(const Tensor& x, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor());
  /// "BatchNormLSTM(28, 128, batch_first=True, max_steps=784)"; shared_statistics=True when set.
  std::string repr() const override;

  int64_t input_size() const { return input_size_; }  ///< Features per input step.
  int64_t hidden_size() const { return hidden_size_; }  ///< H, the hidden state size.
  const BatchNormLSTMOptions& options() const { return o_; }  ///< The options given.
  /// The number of statistics slots: max_steps, or 1 with shared_statistics.
  int64_t slots() const { return o_.shared_statistics ? 1 : o_.max_steps; }
  /// Precise BN over every BatchNorm of the cell (StepBatchNorm): resets their running statistics
  /// (trained_steps is left as it is).
  void reset_running_stats();
  /// While on, the running statistics of every BatchNorm of the cell are averaged cumulatively over
  /// the training forwards (one slot shared by all steps averages over every step of every batch).
  void set_cumulative_statistics(bool on);

 private:
  struct Layer {
    Tensor w_ih, w_hh, b;
    std::shared_ptr<StepBatchNorm> bn_ih, bn_hh, bn_c;
  };
  int64_t input_size_, hidden_size_;
  BatchNormLSTMOptions o_;
  std::vector<Layer> layers_;
  Tensor trained_steps_;  // buffer: rank 0
  Tensor noise_step_;     // buffer with options.noise: rank 0
};

}  // namespace normlab::nn
