// sync_batch_norm: BatchNorm's training forward and backward over a batch split between several
// processes (ranks), as PyTorch's nn.SyncBatchNorm computes them. autograd knows no processes: the
// caller passes the collectives (RankCollectives; nn/'s SyncBatchNorm passes dist/'s).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// The two collectives sync_batch_norm needs over the ranks that hold the parts of one batch. Every
/// rank calls the op's forward and backward together, so each collective is called on every rank in
/// the same order; it must return the same values on every rank.
struct RankCollectives {
  int rank = 0;  ///< this rank, in [0, size) (for messages)
  int size = 1;  ///< how many ranks hold a part of the batch
  /// Every rank's n values, in rank order (size * n values), on every rank.
  std::function<std::vector<double>(const double* x, int64_t n)> allgather;
  /// Sums x (n values) over the ranks, in place on every rank.
  std::function<void(double* x, int64_t n)> allreduce_sum;
};

/// BatchNorm over a batch split across ranks, with the statistics of the whole batch (SyncBatchNorm).
/// x (N, C, *) -> same shape, any rank >= 2, this rank's part of the batch, normalized with the
/// statistics of the whole batch: each channel's count, mean and M2 = sum (x - mean)^2 of every rank
/// (ranks.allgather) are combined in rank order with Chan, Golub and LeVeque's parallel formula (in
/// double; not E[x^2] - E[x]^2). Updates running_mean/running_var (if defined) with factor momentum, the running
/// variance unbiased with the global count; weight, bias (C) or undefined. A global count of 1
/// value per channel or less is PyTorch's error, thrown on every rank. The backward sums sum(dy)
/// and sum(dy xhat) over the ranks (ranks.allreduce_sum) for the input's gradient; the weight's and
/// bias's gradients stay this rank's own, as in PyTorch (a data-parallel job averages them over
/// ranks). ranks.allreduce_sum is copied into the backward: it must still work when that runs.
/// The backward is differentiable (create_graph): BatchNorm's double backward with every group mean
/// a sum over the ranks (the weight's second-order gradient, like its first, is this rank's part:
/// only its sum over the ranks is the whole batch's).
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, double momentum, double eps, const RankCollectives& ranks);

}  // namespace normlab::autograd
