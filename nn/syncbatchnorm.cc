// SyncBatchNorm: BatchNorm's module whose training normalization is autograd's sync_batch_norm
// over dist/'s ranks.
#include "nn/syncbatchnorm.h"

#include <string>

#include "autograd/sync_batch_norm.h"
#include "dist/dist.h"

namespace normlab::nn {

using autograd::shape_str;

namespace {

// dist/'s collectives over the current group (dist::Group), for autograd's op.
autograd::RankCollectives dist_collectives() {
  return {.rank = dist::rank(),
          .size = dist::world_size(),
          .allgather = [](const double* x, int64_t n) { return dist::allgather(x, n); },
          .allreduce_sum = [](double* x, int64_t n) { dist::allreduce_sum(x, n); }};
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, double momentum, double eps) {
  return autograd::sync_batch_norm(x, running_mean, running_var, weight, bias, momentum, eps, dist_collectives());
}

SyncBatchNorm::SyncBatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                             bool track_running_stats, DType dtype)
    : BatchNorm("SyncBatchNorm", num_features, eps, momentum, affine, track_running_stats, dtype) {}

void SyncBatchNorm::check_input(const Tensor& x) const {
  if (x.dim() < 2)
    throw Error("SyncBatchNorm: expected at least 2D input (got " + std::to_string(x.dim()) + "D input of size " +
                shape_str(x.shape()) + ")");
  if (x.size(1) != num_features())
    throw Error("SyncBatchNorm(" + std::to_string(num_features()) + "): expected input of shape (N, " +
                std::to_string(num_features()) + ", *), but got input of size " + shape_str(x.shape()));
}

Tensor SyncBatchNorm::normalize(const Tensor& x, const Tensor& rm, const Tensor& rv, bool use_batch_stats,
                                double f) const {
  if (!is_training() || dist::world_size() == 1) return BatchNorm::normalize(x, rm, rv, use_batch_stats, f);
  return sync_batch_norm(x, rm, rv, weight(), bias(), f, eps());
}

}  // namespace normlab::nn
