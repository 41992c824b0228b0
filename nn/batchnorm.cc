// BatchNorm modules: checked hyper-parameters, PyTorch's state names, the running-statistics
// bookkeeping around batch_norm.
#include "nn/batchnorm.h"

#include <cmath>

#include "autograd/norm.h"
#include "base/format.h"

namespace normlab::nn {

using autograd::shape_str;

BatchNorm::BatchNorm(std::string name, int64_t num_features, double eps, std::optional<double> momentum,
                     bool affine, bool track_running_stats, DType dtype)
    : name_(std::move(name)), num_features_(num_features), eps_(eps), momentum_(momentum), affine_(affine),
      track_running_stats_(track_running_stats) {
  if (num_features <= 0)
    throw Error(name_ + ": num_features must be positive, got " + std::to_string(num_features));
  if (!(eps > 0) || !std::isfinite(eps)) throw Error(name_ + ": eps must be a finite number > 0, got " + base::py_float(eps));
  if (momentum) autograd::check_momentum(*momentum, name_);  // None: a cumulative average
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

void BatchNorm::reset_running_stats() {
  if (!track_running_stats_) return;
  autograd::fill_(running_mean_, 0);
  autograd::fill_(running_var_, 1);
  autograd::fill_(num_batches_tracked_, 0);
}

Tensor BatchNorm::forward(const Tensor& x) {
  check(x.defined(), [&] { return name_ + ": the input is an undefined tensor"; });
  check_input(x);
  const bool update = is_training() && track_running_stats_;
  double f = 0;  // the running-average factor, when updating
  if (update) {
    const double batches = num_batches_tracked_.item() + 1;
    f = momentum_ ? *momentum_ : 1.0 / batches;
  }
  // Batch statistics in training, and in eval too when no running statistics are kept.
  const bool use_batch_stats = is_training() || !track_running_stats_;
  Tensor y = normalize(x, track_running_stats_ ? running_mean_ : Tensor(), track_running_stats_ ? running_var_ : Tensor(),
                       use_batch_stats, f);
  // Counted only once batch_norm accepted the batch (PyTorch counts a refused batch too), so a
  // refused batch leaves the module as it was.
  if (update) num_batches_tracked_.set_flat(0, num_batches_tracked_.item() + 1);
  return y;
}

Tensor BatchNorm::normalize(const Tensor& x, const Tensor& rm, const Tensor& rv, bool use_batch_stats,
                            double f) const {
  return autograd::batch_norm(x, rm, rv, weight_, bias_, use_batch_stats, f, eps_);
}

std::string BatchNorm::repr() const {
  using base::py_bool, base::py_float;
  return name_ + "(" + std::to_string(num_features_) + ", eps=" + py_float(eps_) +
         ", momentum=" + (momentum_ ? py_float(*momentum_) : "None") + ", affine=" + py_bool(affine_) +
         ", track_running_stats=" + py_bool(track_running_stats_) + ")";
}

void BatchNorm::set_momentum(std::optional<double> momentum) {
  if (momentum) autograd::check_momentum(*momentum, name_);  // None: a cumulative average
  momentum_ = momentum;
}

BatchNorm1d::BatchNorm1d(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                         bool track_running_stats, DType dtype)
    : BatchNorm("BatchNorm1d", num_features, eps, momentum, affine, track_running_stats, dtype) {}

void BatchNorm1d::check_input(const Tensor& x) const {
  const std::string c = std::to_string(num_features());
  if (x.dim() != 2 && x.dim() != 3)
    throw Error("BatchNorm1d: expected 2D or 3D input (got " + std::to_string(x.dim()) + "D input of size " +
                shape_str(x.shape()) + ")");
  if (x.size(1) != num_features())
    throw Error("BatchNorm1d(" + c + "): expected input of shape (N, " + c + ") or (N, " + c +
                ", L), but got input of size " + shape_str(x.shape()));
}

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                         bool track_running_stats, DType dtype)
    : BatchNorm("BatchNorm2d", num_features, eps, momentum, affine, track_running_stats, dtype) {}

void BatchNorm2d::check_input(const Tensor& x) const {
  const std::string c = std::to_string(num_features());
  if (x.dim() != 4)
    throw Error("BatchNorm2d: expected 4D input (got " + std::to_string(x.dim()) + "D input of size " +
                shape_str(x.shape()) + ")");
  if (x.size(1) != num_features())
    throw Error("BatchNorm2d(" + c + "): expected input of shape (N, " + c + ", H, W), but got input of size " +
                shape_str(x.shape()));
}

}  // namespace normlab::nn
