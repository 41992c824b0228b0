// BatchNormLSTM: per-step BatchNorm children, parameters, input checks, and the loop over layers and
// steps (one input GEMM per layer; per step the hidden GEMM, the two BatchNorms of the step's slot,
// the gates op, BN_c and the output op).
#include "nn/bn_lstm.h"

#include <algorithm>
#include <cmath>

#include "base/format.h"
#include "nn/init.h"

namespace normlab::nn {

using autograd::dtype_name;
using autograd::shape_str;

// ---- StepBatchNorm ----------------------------------------------------------------------------------

StepBatchNorm::StepBatchNorm(int64_t num_features, int64_t slots, bool shift, double gamma_init, DType dtype)
    : num_features_(num_features), slots_(slots) {
  weight_ = register_parameter("weight", autograd::full({num_features}, gamma_init, dtype));
  if (shift) bias_ = register_parameter("bias", autograd::zeros({num_features}, dtype));
  running_mean_ = register_buffer("running_mean", autograd::zeros({slots, num_features}, dtype));
  running_var_ = register_buffer("running_var", autograd::ones({slots, num_features}, dtype));
}

Tensor StepBatchNorm::forward_step(const Tensor& x, int64_t slot, double momentum, double eps) {
  // Row `slot` of the buffers: a view (dim 0) that batch_norm updates in place.
  const Tensor rm = autograd::select(running_mean_, 0, slot), rv = autograd::select(running_var_, 0, slot);
  // Cumulative: r_k = (1 - 1/k) r_{k-1} + (1/k) stat_k, the mean of the k statistics.
  if (cumulative_ && is_training()) momentum = 1.0 / static_cast<double>(++updates_[static_cast<size_t>(slot)]);
  return autograd::batch_norm(x, rm, rv, weight_, bias_, is_training(), momentum, eps);
}

void StepBatchNorm::reset_running_stats() {
  autograd::NoGradGuard no_grad;
  autograd::fill_(running_mean_, 0);
  autograd::fill_(running_var_, 1);
}

void StepBatchNorm::set_cumulative(bool on) {
  cumulative_ = on;
  updates_.assign(static_cast<size_t>(slots_), 0);
}

Tensor StepBatchNorm::forward(const Tensor& x) { return forward_step(x, 0, 0.1, 1e-5); }

std::string StepBatchNorm::repr() const {
  return "StepBatchNorm(" + std::to_string(num_features_) + ", slots=" + std::to_string(slots_) + ")";
}

// ---- BatchNormLSTM ----------------------------------------------------------------------------------

BatchNormLSTM::BatchNormLSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const BatchNormLSTMOptions& o)
    : input_size_(input_size), hidden_size_(hidden_size), o_(o) {
  if (input_size < 1 || hidden_size < 1 || o.num_layers < 1 || o.max_steps < 1)
    throw Error("BatchNormLSTM: expected input_size, hidden_size, num_layers and max_steps >= 1, got input_size=" +
                std::to_string(input_size) + ", hidden_size=" + std::to_string(hidden_size) +
                ", num_layers=" + std::to_string(o.num_layers) + ", max_steps=" + std::to_string(o.max_steps));
  autograd::check_momentum(o.momentum, "BatchNormLSTM");
  const int64_t H = hidden_size;
  for (int64_t k = 0; k < o.num_layers; ++k) {
    const std::string s = "_l" + std::to_string(k);
    Layer l;
    l.w_ih = register_parameter("weight_ih" + s, autograd::empty({4 * H, k == 0 ? input_size : H}, o.dtype));
    l.w_hh = register_parameter("weight_hh" + s, autograd::empty({4 * H, H}, o.dtype));
    l.b = register_parameter("bias" + s, autograd::empty({4 * H}, o.dtype));
    layers_.push_back(l);
  }
  const double bound = 1 / std::sqrt(static_cast<double>(H));
  for (const Tensor& p : parameters()) init::uniform_(p, -bound, bound, gen);
  trained_steps_ = register_buffer("trained_steps", autograd::scalar(0, o.dtype));
  for (int64_t k = 0; k < o.num_layers; ++k) {
    const std::string s = "_l" + std::to_string(k);
    Layer& l = layers_[k];
    l.bn_ih = register_module("bn_ih" + s, std::make_shared<StepBatchNorm>(4 * H, slots(), false, o.gamma_init, o.dtype));
    l.bn_hh = register_module("bn_hh" + s, std::make_shared<StepBatchNorm>(4 * H, slots(), false, o.gamma_init, o.dtype));
    l.bn_c = register_module("bn_c" + s, std::make_shared<StepBatchNorm>(H, slots(), true, o.gamma_init, o.dtype));
  }
  if (o.noise) {
    check_noise(*o.noise, "BatchNormLSTM");
    noise_step_ = register_buffer("noise_step", autograd::scalar(0, o.dtype));
  }
}

Tensor BatchNormLSTM::forward(const Tensor& x) { return forward_with_state(x).output; }

LSTMOutput BatchNormLSTM::forward_with_state(const Tensor& x, const Tensor& h0, const Tensor& c0) {
  using namespace autograd;
  const Tensor xt = lstm_time_major_input(repr(), x, h0, c0, input_size_, hidden_size_, o_.num_layers, o_.batch_first,
                                          layers_[0].w_ih.dtype());
  const int64_t T = xt.size(0), B = xt.size(1), H = hidden_size_;
  // The statistics slot of step t: in training min(t, slots - 1); in eval also at most the last
  // trained step's.
  const int64_t last = is_training() ? slots() - 1
                                     : std::clamp<int64_t>(static_cast<int64_t>(trained_steps_.item()) - 1, 0,
                                                           slots() - 1);
  // The noise of this forward (with options.noise): per layer, BN_ih's, BN_hh's and BN_c's scale
  // and shift, (1, C) over the batch; drawn in training, their expectations in eval.
  const bool draw = o_.noise && is_training();
  const auto noise_step = o_.noise ? static_cast<uint64_t>(noise_step_.item()) : 0;
  std::vector<NoiseAffine> nz;  // layer k's three: BN_ih, BN_hh, BN_c
  const auto noisy = [&](const Tensor& y, size_t which) { return o_.noise ? y * nz[which].scale + nz[which].shift : y; };
  Tensor seq = xt;
  std::vector<Tensor> h_last, c_last, hs(T);
  for (int64_t k = 0; k < o_.num_layers; ++k) {
    const Layer& l = layers_[k];
    nz.clear();
    for (int64_t j = 0; o_.noise && j < 3; ++j) {
      const int64_t units = j < 2 ? 4 * H : H;
      const uint64_t seed = o_.noise_seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(3 * k + j + 1));
      nz.push_back(noise_affine(*o_.noise, units, seed, noise_step, draw, {1, units}, l.w_ih.dtype()));
    }
    const Tensor wx = reshape(linear(reshape(seq, {T * B, seq.size(2)}), l.w_ih), {T, B, 4 * H});
    Tensor h = h0.defined() ? select(h0, 0, k) : zeros({B, H}, x.dtype());
    Tensor c = c0.defined() ? select(c0, 0, k) : zeros({B, H}, x.dtype());
    for (int64_t t = 0; t < T; ++t) {
      const int64_t slot = std::min(t, last);
      const Tensor G = noisy(l.bn_ih->forward_step(select(wx, 0, t), slot, o_.momentum, o_.eps), 0) +
                       noisy(l.bn_hh->forward_step(linear(h, l.w_hh), slot, o_.momentum, o_.eps), 1) + l.b;
      const Tensor st = lstm_gates(G, c);  // (2, B, H): o, c
      c = select(st, 0, 1);
      h = lstm_output(select(st, 0, 0), noisy(l.bn_c->forward_step(c, slot, o_.momentum, o_.eps), 2));
      hs[t] = h;
    }
    seq = stack(hs, 0);
    h_last.push_back(h);
    c_last.push_back(c);
  }
  if (is_training()) {
    const double trained = std::max(trained_steps_.item(), static_cast<double>(std::min(T, slots())));
    NoGradGuard no_grad;
    fill_(trained_steps_, trained);
    if (draw) fill_(noise_step_, static_cast<double>(noise_step + 1));
  }
  return {o_.batch_first ? transpose(seq, 0, 1) : seq, stack(h_last, 0), stack(c_last, 0)};
}

void BatchNormLSTM::reset_running_stats() {
  for (const Layer& l : layers_)
    for (const auto& bn : {l.bn_ih, l.bn_hh, l.bn_c}) bn->reset_running_stats();
}

void BatchNormLSTM::set_cumulative_statistics(bool on) {
  for (const Layer& l : layers_)
    for (const auto& bn : {l.bn_ih, l.bn_hh, l.bn_c}) bn->set_cumulative(on);
}

std::string BatchNormLSTM::repr() const {
  std::string r = "BatchNormLSTM(" + std::to_string(input_size_) + ", " + std::to_string(hidden_size_);
  if (o_.num_layers != 1) r += ", num_layers=" + std::to_string(o_.num_layers);
  if (o_.batch_first) r += ", batch_first=True";
  r += ", max_steps=" + std::to_string(o_.max_steps);
  if (o_.shared_statistics) r += ", shared_statistics=True";
  if (o_.noise)
    r += ", noise=(scale=U[" + base::py_float(o_.noise->scale_lo) + ", " + base::py_float(o_.noise->scale_hi) +
         "), shift=U[" + base::py_float(o_.noise->shift_lo) + ", " + base::py_float(o_.noise->shift_hi) + "))";
  return r + ")";
}

}  // namespace normlab::nn
