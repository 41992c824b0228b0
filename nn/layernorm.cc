// LayerNorm module: checked hyper-parameters, PyTorch's parameter names, layer_norm forward.
#include "nn/layernorm.h"

#include <cmath>

#include "autograd/norm.h"
#include "base/format.h"

namespace normlab::nn {

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine, bool bias, DType dtype)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps), elementwise_affine_(elementwise_affine) {
  if (normalized_shape_.empty())
    throw Error("LayerNorm: normalized_shape must have at least one dim, got " + autograd::py_tuple(normalized_shape_));
  for (int64_t d : normalized_shape_)
    if (d <= 0)
      throw Error("LayerNorm: normalized_shape must have positive sizes, got " + autograd::py_tuple(normalized_shape_));
  if (!(eps > 0) || !std::isfinite(eps))
    throw Error("LayerNorm: eps must be a finite number > 0, got " + base::py_float(eps));
  if (elementwise_affine) {
    weight_ = register_parameter("weight", autograd::ones(normalized_shape_, dtype));
    if (bias) bias_ = register_parameter("bias", autograd::zeros(normalized_shape_, dtype));
  }
}

Tensor LayerNorm::forward(const Tensor& x) { return autograd::layer_norm(x, normalized_shape_, weight_, bias_, eps_); }

std::string LayerNorm::repr() const {
  return "LayerNorm(" + autograd::py_tuple(normalized_shape_) + ", eps=" + base::py_float(eps_) +
         ", elementwise_affine=" + base::py_bool(elementwise_affine_) + ")";
}

}  // namespace normlab::nn
