// NoisyBatchNorm: BatchNorm whose output is made unstable on purpose, the control of Santurkar et
// al. 2018 (section 2.1) that separates "BatchNorm keeps each layer's input distribution stable"
// from "BatchNorm changes the optimization". In training, every forward pass draws for each unit
// (channel) c a scale s_c ~ U[scale_lo, scale_hi) and a shift m_c ~ U[shift_lo, shift_hi), anew at
// every step, and returns s_c BN(x)_c + m_c: the layer's output has a mean and a variance that move
// at every step and are not 0 and 1. Evaluation draws no noise: BatchNorm with its running
// statistics, times the scale's expectation plus the shift's (1.25 BN(x) + 0.5 by default), the
// transform the next layer saw on average in training (as Dropout's evaluation is its average;
// BatchNorm's output alone would shift every next layer's input by -0.5 at evaluation).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nn/batchnorm.h"
#include "nn/module.h"

namespace normlab::nn {

/// The noise's distributions: defaults give the scale a mean of 1.25 (variance 0.1875) and the shift
/// a mean of 0.5 (variance 1/3).
struct NoiseOptions {
  double scale_lo = 0.5;   ///< the scale's lower bound
  double scale_hi = 2.0;   ///< its upper bound (excluded)
  double shift_lo = -0.5;  ///< the shift's lower bound
  double shift_hi = 1.5;   ///< its upper bound (excluded)
};

/// One step's noise for C units: scale s_c ~ U[scale_lo, scale_hi) and shift m_c ~ U[shift_lo,
/// shift_hi), from a generator seeded by (seed, step) alone; with draw false, their expectations
/// (the transform of evaluation). Returned as (C) viewed as `view` (e.g. (1, C, 1, 1)) in dtype.
struct NoiseAffine {
  Tensor scale, shift;
};
NoiseAffine noise_affine(const NoiseOptions& noise, int64_t c, uint64_t seed, uint64_t step, bool draw,
                         const autograd::Shape& view, DType dtype);

/// Throws for noise bounds that are not finite or not ordered (lo < hi); who: the module's name.
void check_noise(const NoiseOptions& noise, const std::string& who);

/// x (N, C) or (N, C, L) (image = false, as BatchNorm1d) or (N, C, H, W) (image = true, as
/// BatchNorm2d) -> the same shape. BatchNorm's parameters and buffers under PyTorch's names, and one
/// more buffer, "noise_step": the noisy forwards so far (rank 0, float32, like num_batches_tracked).
/// Step k's noise is a function of (seed, k) alone, so restoring the buffers repeats it exactly.
class NoisyBatchNorm : public BatchNorm {
 public:
  /// BatchNorm's defaults (eps 1e-5, momentum 0.1, affine, running statistics); throws for noise
  /// bounds that are not finite or not ordered (lo < hi), and as BatchNorm does.
  NoisyBatchNorm(int64_t num_features, bool image, uint64_t seed, NoiseOptions noise = {},
                 DType dtype = DType::Float32);
  /// Training: s_c BN(x)_c + m_c with this step's noise (then the step count moves on); eval (or
  /// the noise off): E[s] BN(x) + E[m].
  Tensor forward(const Tensor& x) override;
  /// "NoisyBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True,
  /// scale=U[0.5, 2.0), shift=U[-0.5, 1.5))".
  std::string repr() const override;

  const NoiseOptions& noise() const { return noise_; }  ///< The noise's distributions.
  uint64_t seed() const { return seed_; }               ///< The noise's seed.
  bool image() const { return image_; }                 ///< (N, C, H, W) inputs.
  /// Turns the noise off (training mode then draws nothing and applies the noise's expectation, as
  /// evaluation does) or back on: for an evaluation that normalizes test batches with their own statistics.
  void set_noise_enabled(bool on) { noise_enabled_ = on; }
  bool noise_enabled() const { return noise_enabled_; }  ///< Whether training mode adds the noise.

 protected:
  void check_input(const Tensor& x) const override;

 private:
  bool image_;
  bool noise_enabled_ = true;
  uint64_t seed_;
  NoiseOptions noise_;
  Tensor step_;
};

}  // namespace normlab::nn
