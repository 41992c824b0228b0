// Linear: parameter setup with PyTorch's default init, input checks, and the fused autograd::linear.
#include "nn/linear.h"

#include <cmath>

#include "nn/init.h"

namespace normlab::nn {

using autograd::dtype_name;
using autograd::shape_str;

Linear::Linear(int64_t in_features, int64_t out_features, Generator& gen, bool bias)
    : in_features_(in_features), out_features_(out_features) {
  if (in_features < 0 || out_features < 0)
    throw Error("Linear: expected in_features >= 0 and out_features >= 0, got in_features=" +
                std::to_string(in_features) + ", out_features=" + std::to_string(out_features));
  // PyTorch's reset_parameters(): kaiming_uniform_(W, a=sqrt(5)) gives bound = gain * sqrt(3 / fan_in)
  // with gain = sqrt(2 / (1 + 5)), i.e. 1/sqrt(fan_in); the bias uses the same bound.
  weight_ = register_parameter("weight", autograd::empty({out_features, in_features}));
  init::kaiming_uniform_(weight_, gen, std::sqrt(5.0));
  if (bias) {
    const double bound = in_features > 0 ? 1 / std::sqrt(static_cast<double>(in_features)) : 0;
    bias_ = register_parameter("bias", autograd::empty({out_features}));
    init::uniform_(bias_, -bound, bound, gen);
  }
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() < 1 || x.size(-1) != in_features_)
    throw Error("Linear(in_features=" + std::to_string(in_features_) + ", out_features=" +
                std::to_string(out_features_) + "): expected input of shape (*, " + std::to_string(in_features_) +
                "), got " + shape_str(x.shape()));
  if (x.dtype() != weight_.dtype())
    throw Error("Linear: the input is " + dtype_name(x.dtype()) + " but the parameters are " +
                dtype_name(weight_.dtype()) + " (convert the input, or the module with to(" +
                dtype_name(x.dtype()) + "))");
  return autograd::linear(x, weight_, bias_);
}

std::string Linear::repr() const {
  return "Linear(in_features=" + std::to_string(in_features_) + ", out_features=" + std::to_string(out_features_) +
         ", bias=" + (bias_.defined() ? "True" : "False") + ")";
}

}  // namespace normlab::nn
