// InstanceNorm2d (PyTorch's nn.InstanceNorm2d): normalizes each (sample, channel) plane of an image
// batch over its H W values.
#pragma once
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// InstanceNorm2d(num_features, eps=1e-5, momentum=0.1, affine=false, track_running_stats=false),
/// PyTorch's defaults. x (N, C, H, W): each (n, c) plane is normalized with its own mean and biased
/// variance, then, with affine, scaled and shifted per channel by weight (ones) and bias (zeros).
/// With track_running_stats, training also updates running_mean and running_var (C) with the
/// average over the batch of each plane's mean and unbiased variance,
///   running = (1 - momentum) running + momentum mean_n(statistic of plane (n, c)),
/// and eval normalizes with them; without it, eval uses each plane's own statistics too. The
/// buffers are named as PyTorch's (running_mean, running_var, num_batches_tracked, which PyTorch's
/// InstanceNorm never advances), so checkpoints load in PyTorch.
class InstanceNorm2d : public Module {
 public:
  /// Throws for num_features < 1, eps <= 0 or not finite, momentum outside [0, 1].
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false, DType dtype = DType::Float32);
  /// x (N, num_features, H, W) -> same shape. A plane of one value cannot be normalized in training
  /// (or without running statistics): an error, as in PyTorch.
  Tensor forward(const Tensor& x) override;
  /// "InstanceNorm2d(32, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)".
  std::string repr() const override;

  int64_t num_features() const { return num_features_; }  ///< C.
  double eps() const { return eps_; }  ///< Added to the variance.
  double momentum() const { return momentum_; }  ///< Running-average factor.
  bool affine() const { return affine_; }  ///< Whether there are weight and bias.
  bool track_running_stats() const { return track_running_stats_; }  ///< Whether there are running statistics.
  /// (C) each; undefined without affine / track_running_stats.
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  ///< Per-channel shift.
  const Tensor& running_mean() const { return running_mean_; }  ///< Running mean.
  const Tensor& running_var() const { return running_var_; }  ///< Running variance.

 private:
  int64_t num_features_;
  double eps_, momentum_;
  bool affine_, track_running_stats_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};

}  // namespace normlab::nn
