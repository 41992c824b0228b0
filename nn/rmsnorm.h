// RMSNorm module (PyTorch 2.4's nn.RMSNorm): scales each sample by the root mean square of its trailing dims.
#pragma once
#include <optional>
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// RMS normalization, PyTorch's nn.RMSNorm.
/// RMSNorm(normalized_shape, eps=None, elementwise_affine=true): y = x / sqrt(mean(x^2) + eps) * weight
/// over the trailing normalized_shape dims; weight (ones at first) has shape normalized_shape. eps
/// nullopt means the machine epsilon of the input's dtype, as in PyTorch.
class RMSNorm : public Module {
 public:
  /// Dtype is PyTorch's factory argument (Float64 for gradient checks).
  explicit RMSNorm(Shape normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true,
                   DType dtype = DType::Float32);
  /// x (*, normalized_shape) -> same shape.
  Tensor forward(const Tensor& x) override;
  /// "RMSNorm((3,), eps=None, elementwise_affine=True)".
  std::string repr() const override;

  /// The constructor's arguments (eps nullopt: the input dtype's machine epsilon).
  const Shape& normalized_shape() const { return normalized_shape_; }
  std::optional<double> eps() const { return eps_; }  ///< Added to the mean square; nullopt: the machine epsilon.
  /// The scale, shape normalized_shape (undefined without elementwise_affine).
  const Tensor& weight() const { return weight_; }

 private:
  Shape normalized_shape_;
  std::optional<double> eps_;
  bool elementwise_affine_;
  Tensor weight_;
};

}  // namespace normlab::nn
