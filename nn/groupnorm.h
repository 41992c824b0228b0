// GroupNorm module (PyTorch's nn.GroupNorm): normalizes each sample over groups of channels.
#pragma once
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// Group normalization, PyTorch's nn.GroupNorm.
/// GroupNorm(num_groups, num_channels, eps=1e-5, affine=true): the channels of x (N, C, *) form
/// num_groups groups; each (sample, group) is normalized with its own mean and biased variance, then
/// scaled and shifted per channel by weight and bias (C), ones and zeros at first. Independent of the
/// batch: train and eval are the same.
class GroupNorm : public Module {
 public:
  /// Throws for sizes below 1, num_groups not dividing num_channels, or eps not > 0.
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true,
            DType dtype = DType::Float32);
  /// x (N, num_channels, *) -> same shape.
  Tensor forward(const Tensor& x) override;
  /// "GroupNorm(2, 4, eps=1e-05, affine=True)".
  std::string repr() const override;

  /// The constructor's arguments.
  int64_t num_groups() const { return num_groups_; }
  int64_t num_channels() const { return num_channels_; }  ///< C.
  double eps() const { return eps_; }  ///< Added to the variance.
  /// Per-channel scale and shift, (C) (undefined without affine).
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  ///< Per-channel shift, (C).

 private:
  int64_t num_groups_, num_channels_;
  double eps_;
  bool affine_;
  Tensor weight_, bias_;
};

}  // namespace normlab::nn
