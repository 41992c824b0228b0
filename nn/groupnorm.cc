// GroupNorm module: checked hyper-parameters, PyTorch's parameter names, group_norm forward.
#include "nn/groupnorm.h"

#include <cmath>

#include "autograd/norm.h"
#include "base/format.h"

namespace normlab::nn {

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine, DType dtype)
    : num_groups_(num_groups), num_channels_(num_channels), eps_(eps), affine_(affine) {
  if (num_groups <= 0) throw Error("GroupNorm: num_groups must be positive, got " + std::to_string(num_groups));
  if (num_channels <= 0)
    throw Error("GroupNorm: num_channels must be positive, got " + std::to_string(num_channels));
  if (num_channels % num_groups != 0)
    throw Error("GroupNorm: num_channels must be divisible by num_groups, got num_channels=" +
                std::to_string(num_channels) + " and num_groups=" + std::to_string(num_groups));
  if (!(eps > 0) || !std::isfinite(eps)) throw Error("GroupNorm: eps must be a finite number > 0, got " + base::py_float(eps));
  if (affine) {
    weight_ = register_parameter("weight", autograd::ones({num_channels}, dtype));
    bias_ = register_parameter("bias", autograd::zeros({num_channels}, dtype));
  }
}

Tensor GroupNorm::forward(const Tensor& x) {
  check(x.defined(), [] { return std::string("GroupNorm: the input is an undefined tensor"); });
  if (x.dim() < 2 || x.size(1) != num_channels_)
    throw Error("GroupNorm(" + std::to_string(num_groups_) + ", " + std::to_string(num_channels_) +
                "): expected input of shape (N, " + std::to_string(num_channels_) + ", *), but got input of size " +
                autograd::shape_str(x.shape()));
  return autograd::group_norm(x, num_groups_, weight_, bias_, eps_);
}

std::string GroupNorm::repr() const {
  return "GroupNorm(" + std::to_string(num_groups_) + ", " + std::to_string(num_channels_) +
         ", eps=" + base::py_float(eps_) + ", affine=" + base::py_bool(affine_) + ")";
}

}  // namespace normlab::nn
