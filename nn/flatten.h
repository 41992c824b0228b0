// Flatten and Unflatten (PyTorch's nn.Flatten, nn.Unflatten): reshaping layers between image
// activations (N, C, H, W) and feature rows (N, C H W). No parameters.
#pragma once
#include <cstdint>
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// Flattens dims start_dim..end_dim into one: (N, C, H, W) -> (N, C H W) by default.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_(start_dim), end_(end_dim) {}  ///< Flattens dims start_dim..end_dim (negative counts from the end).
  Tensor forward(const Tensor& x) override;
  /// "Flatten(start_dim=1, end_dim=-1)".
  std::string repr() const override;

 private:
  int64_t start_, end_;
};

/// Expands dim `dim` into `sizes`: Unflatten(1, {1, 28, 28}) maps (N, 784) to (N, 1, 28, 28); the
/// product of sizes must equal the size of that dim (else an error naming both).
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, Shape sizes);  ///< Expands dim into sizes.
  Tensor forward(const Tensor& x) override;
  /// "Unflatten(dim=1, unflattened_size=(1, 28, 28))".
  std::string repr() const override;

 private:
  int64_t dim_;
  Shape sizes_;
};

}  // namespace normlab::nn
