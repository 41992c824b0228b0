// SyncBatchNorm (PyTorch's nn.SyncBatchNorm): BatchNorm whose training statistics are those of the
// whole batch of a data-parallel job, every rank's part (dist/), not of this rank's part alone.
#pragma once
#include <memory>
#include <optional>

#include "nn/batchnorm.h"

namespace normlab::nn {

/// BatchNorm with the statistics of the whole batch over data-parallel ranks, PyTorch's nn.SyncBatchNorm.
/// x (N, C, *) -> same shape, any rank >= 2, as PyTorch's. In training, every rank normalizes with
/// the statistics of the global batch (autograd::sync_batch_norm over dist/'s current group: the
/// counts, means and M2 of every rank combined in rank order, the running variance unbiased with the
/// global count); the backward sums the input gradient's terms over the ranks, while the weight's
/// and bias's gradients stay this rank's own, as in PyTorch (a data-parallel job averages them over
/// ranks). Eval mode is BatchNorm's. In a world of one rank it is BatchNorm, as PyTorch's falls back.
/// Every rank must call forward and backward together (they are collectives).
class SyncBatchNorm : public BatchNorm {
 public:
  /// BatchNorm's arguments and checks (see BatchNorm1d).
  explicit SyncBatchNorm(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true, DType dtype = DType::Float32);

 protected:
  void check_input(const Tensor& x) const override;
  /// In training over more than one rank: sync_batch_norm; else BatchNorm's (PyTorch's fallback).
  Tensor normalize(const Tensor& x, const Tensor& rm, const Tensor& rv, bool use_batch_stats,
                   double f) const override;
};

/// The training forward of SyncBatchNorm as a function, PyTorch's F.batch_norm arguments: updates
/// running_mean/running_var (if defined) with factor momentum; weight, bias (C) or undefined.
/// autograd::sync_batch_norm with dist/'s collectives.
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, double momentum, double eps);

}  // namespace normlab::nn
