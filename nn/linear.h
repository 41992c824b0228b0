// Linear: the fully connected layer y = x W^T + b (PyTorch's nn.Linear, with its default init).
#pragma once
#include <cstdint>
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// A fully connected layer, PyTorch's nn.Linear: y = x W^T + b.
class Linear : public Module {
 public:
  /// A layer of in_features -> out_features with PyTorch's default init drawn from gen.
  /// weight (out_features, in_features) and, if bias, bias (out_features), both drawn from gen as
  /// PyTorch does: W, b ~ U(-1/sqrt(in_features), 1/sqrt(in_features)) (W by kaiming_uniform_ with
  /// a = sqrt(5); b is zero when in_features is 0). Float32; convert with to(DType::Float64).
  Linear(int64_t in_features, int64_t out_features, Generator& gen, bool bias = true);

  /// x: (*, in_features) -> (*, out_features).
  Tensor forward(const Tensor& x) override;
  /// "Linear(in_features=4, out_features=2, bias=True)".
  std::string repr() const override;

  /// The sizes given at construction.
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }  ///< The output size.
  /// The weight (out_features, in_features).
  const Tensor& weight() const { return weight_; }
  /// The bias (out_features), undefined when the layer has none.
  const Tensor& bias() const { return bias_; }

 private:
  int64_t in_features_, out_features_;
  Tensor weight_, bias_;
};

}  // namespace normlab::nn
