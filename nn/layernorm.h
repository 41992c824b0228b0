// LayerNorm module (PyTorch's nn.LayerNorm): normalizes each sample over its trailing dims.
#pragma once
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// Layer normalization, PyTorch's nn.LayerNorm.
/// LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=true, bias=true): layer_norm over the
/// trailing normalized_shape dims (biased variance), then * weight + bias, both of shape
/// normalized_shape (ones and zeros at first). No running statistics: train and eval are the same.
class LayerNorm : public Module {
 public:
  /// dtype is PyTorch's factory argument (Float64 for gradient checks).
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true,
                     DType dtype = DType::Float32);
  /// x (*, normalized_shape) -> same shape; other shapes are an error naming both shapes.
  Tensor forward(const Tensor& x) override;
  /// "LayerNorm((3,), eps=1e-05, elementwise_affine=True)".
  std::string repr() const override;

  /// The constructor's arguments.
  const Shape& normalized_shape() const { return normalized_shape_; }
  double eps() const { return eps_; }  ///< Added to the variance.
  bool elementwise_affine() const { return elementwise_affine_; }  ///< Whether there are weight (and bias).
  /// The scale, shape normalized_shape (undefined without elementwise_affine).
  const Tensor& weight() const { return weight_; }
  /// The shift, shape normalized_shape (undefined without elementwise_affine or with bias=false).
  const Tensor& bias() const { return bias_; }

 private:
  Shape normalized_shape_;
  double eps_;
  bool elementwise_affine_;
  Tensor weight_, bias_;
};

}  // namespace normlab::nn
