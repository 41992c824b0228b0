// Loss functions as small callable classes (PyTorch's nn.CrossEntropyLoss and nn.MSELoss, mean
// reduction), wrapping autograd::cross_entropy and autograd::mse_loss.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace normlab::nn {

using autograd::Tensor;

/// -mean_i log softmax(input_i)[target_i] for logits input (N, C) and class indices target (N) in
/// [0, C); returns a scalar. Gradient wrt input: (softmax(input) - onehot(target)) / N.
class CrossEntropyLoss {
 public:
  Tensor operator()(const Tensor& input, const std::vector<int64_t>& target) const;  ///< The mean cross-entropy of input (N, C) against target (N).
  /// "CrossEntropyLoss()".
  std::string repr() const { return "CrossEntropyLoss()"; }
};

/// mean((input - target)^2) over all elements, input and target of the same shape; returns a scalar.
/// Gradient wrt input: 2 (input - target) / numel.
class MSELoss {
 public:
  Tensor operator()(const Tensor& input, const Tensor& target) const;  ///< The mean squared error.
  /// "MSELoss()".
  std::string repr() const { return "MSELoss()"; }
};

}  // namespace normlab::nn
