// Loss classes: thin wrappers; the forward and backward live in autograd/loss.cc.
#include "nn/loss.h"

namespace normlab::nn {

Tensor CrossEntropyLoss::operator()(const Tensor& input, const std::vector<int64_t>& target) const {
  return autograd::cross_entropy(input, target);
}

Tensor MSELoss::operator()(const Tensor& input, const Tensor& target) const {
  return autograd::mse_loss(input, target);
}

}  // namespace normlab::nn
