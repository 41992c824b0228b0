// SyncBatchNorm (PyTorch's nn.SyncBatchNorm): BatchNorm whose training statistics are those of the
// whole batch of a data-parallel job, every rank's part (dist/), not of this rank's part alone.
#pragma once
#include <memory>
#include <optional>

#include "nn/batchnorm.h"

namespace normlab::nn {

// x (N, C, *) -> same shape, any rank >= 2, as PyTorch's. In training, each channel's count, mean
// and M2 = sum (x - mean)^2 of every rank are combined in rank order with Chan et al.'s parallel
// formula (in double; not E[x^2] - E[x]^2), so every rank normalizes with the global batch
// statistics, and the running variance is unbiased with the global count. The backward sums
// sum(dy) and sum(dy xhat) over the ranks for the input's gradient; the weight's and bias's
// gradients stay this rank's own, as in PyTorch (a data-parallel job averages them over ranks).
// Eval mode is BatchNorm's. In a world of one rank it is BatchNorm, as PyTorch's falls back.
// Every rank must call forward and backward together (they are collectives).
class SyncBatchNorm : public BatchNorm {
 public:
  explicit SyncBatchNorm(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true, DType dtype = DType::Float32);

 protected:
  void check_input(const Tensor& x) const override;
  // In training over more than one rank: sync_batch_norm; else BatchNorm's (PyTorch's fallback).
  Tensor normalize(const Tensor& x, const Tensor& rm, const Tensor& rv, bool use_batch_stats,
                   double f) const override;
};

// The training forward of SyncBatchNorm as a function, PyTorch's F.batch_norm arguments: updates
// running_mean/running_var (if defined) with factor momentum; weight, bias (C) or undefined.
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, double momentum, double eps);

}  // namespace normlab::nn
