// Activation modules: ReLU, Tanh, Sigmoid, GELU (tanh approximation) and Identity, wrapping the
// differentiable elementwise ops of autograd. None has parameters; each maps (*) -> (*).
#pragma once
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// max(x, 0).
class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string repr() const override { return "ReLU()"; }
};

/// tanh(x).
class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string repr() const override { return "Tanh()"; }
};

/// 1 / (1 + exp(-x)).
class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string repr() const override { return "Sigmoid()"; }
};

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): PyTorch's GELU(approximate='tanh').
class GELU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string repr() const override { return "GELU(approximate='tanh')"; }
};

/// x itself (the same tensor, as PyTorch's nn.Identity), e.g. a "no normalization" slot.
class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string repr() const override { return "Identity()"; }
};

}  // namespace normlab::nn
