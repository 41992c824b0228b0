// RMSNorm module: checked hyper-parameters, PyTorch's parameter name, rms_norm forward.
#include "nn/rmsnorm.h"

#include <cmath>

#include "autograd/norm.h"
#include "base/format.h"

namespace normlab::nn {

RMSNorm::RMSNorm(Shape normalized_shape, std::optional<double> eps, bool elementwise_affine, DType dtype)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps), elementwise_affine_(elementwise_affine) {
  if (normalized_shape_.empty())
    throw Error("RMSNorm: normalized_shape must have at least one dim, got " + autograd::py_tuple(normalized_shape_));
  for (int64_t d : normalized_shape_)
    if (d <= 0) throw Error("RMSNorm: normalized_shape must have positive sizes, got " + autograd::py_tuple(normalized_shape_));
  if (eps && (!(*eps > 0) || !std::isfinite(*eps)))
    throw Error("RMSNorm: eps must be a finite number > 0 (or None for the dtype's machine epsilon), got " +
                base::py_float(*eps));
  if (elementwise_affine) weight_ = register_parameter("weight", autograd::ones(normalized_shape_, dtype));
}

Tensor RMSNorm::forward(const Tensor& x) { return autograd::rms_norm(x, normalized_shape_, weight_, eps_); }

std::string RMSNorm::repr() const {
  return "RMSNorm(" + autograd::py_tuple(normalized_shape_) + ", eps=" + (eps_ ? base::py_float(*eps_) : "None") +
         ", elementwise_affine=" + base::py_bool(elementwise_affine_) + ")";
}

}  // namespace normlab::nn
