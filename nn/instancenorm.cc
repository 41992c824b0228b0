// InstanceNorm2d: group_norm with one group per channel (the same statistics: each (n, c) plane's
// mean and biased variance), plus PyTorch's optional running statistics.
#include "nn/instancenorm.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/norm.h"
#include "base/format.h"

namespace normlab::nn {

InstanceNorm2d::InstanceNorm2d(int64_t num_features, double eps, double momentum, bool affine,
                               bool track_running_stats, DType dtype)
    : num_features_(num_features), eps_(eps), momentum_(momentum), affine_(affine),
      track_running_stats_(track_running_stats) {
  if (num_features < 1)
    throw Error("InstanceNorm2d: num_features must be at least 1, got " + std::to_string(num_features));
  if (!(eps > 0) || !std::isfinite(eps))
    throw Error("InstanceNorm2d: eps must be a finite number > 0, got " + base::py_float(eps));
  autograd::check_momentum(momentum, "InstanceNorm2d");
  if (affine) {
    weight_ = register_parameter("weight", autograd::ones({num_features}, dtype));
    bias_ = register_parameter("bias", autograd::zeros({num_features}, dtype));
  }
  if (track_running_stats) {
    running_mean_ = register_buffer("running_mean", autograd::zeros({num_features}, dtype));
    running_var_ = register_buffer("running_var", autograd::ones({num_features}, dtype));
    num_batches_tracked_ = register_buffer("num_batches_tracked", autograd::scalar(0, DType::Float32));
  }
}

Tensor InstanceNorm2d::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(1) != num_features_)
    throw Error(repr() + ": expected input of shape (N, " + std::to_string(num_features_) + ", H, W), got " +
                autograd::shape_str(x.shape()));
  const bool use_input_stats = is_training() || !track_running_stats_;
  const int64_t N = x.size(0), C = num_features_, hw = x.size(2) * x.size(3);
  if (use_input_stats && hw == 1)
    throw Error(repr() + ": expected more than 1 spatial element when training, got input of size " +
                autograd::shape_str(x.shape()));
  if (!use_input_stats)
    return autograd::batch_norm(x, running_mean_, running_var_, weight_, bias_, false, momentum_, eps_);
  Tensor y = autograd::group_norm(x, C, weight_, bias_, eps_);
  if (track_running_stats_ && N > 0) {
    // running = (1 - m) running + m mean_n(mean or unbiased variance of plane (n, c)), in float64.
    autograd::dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* v = x.data<T>();
      T* rm = running_mean_.data<T>();
      T* rv = running_var_.data<T>();
      for (int64_t c = 0; c < C; ++c) {
        double mean_sum = 0, var_sum = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* p = v + (n * C + c) * hw;
          double s = 0, ss = 0;
          for (int64_t i = 0; i < hw; ++i) s += p[i];
          const double mean = s / static_cast<double>(hw);
          for (int64_t i = 0; i < hw; ++i) ss += (p[i] - mean) * (p[i] - mean);
          mean_sum += mean;
          var_sum += ss / static_cast<double>(hw - 1);
        }
        rm[c] = static_cast<T>((1 - momentum_) * rm[c] + momentum_ * (mean_sum / static_cast<double>(N)));
        rv[c] = static_cast<T>((1 - momentum_) * rv[c] + momentum_ * (var_sum / static_cast<double>(N)));
      }
    });
  }
  return y;
}

std::string InstanceNorm2d::repr() const {
  return "InstanceNorm2d(" + std::to_string(num_features_) + ", eps=" + base::py_float(eps_) +
         ", momentum=" + base::py_float(momentum_) + ", affine=" + base::py_bool(affine_) +
         ", track_running_stats=" + base::py_bool(track_running_stats_) + ")";
}

}  // namespace normlab::nn
