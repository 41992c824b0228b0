// Differentiable softmax, log_softmax and the losses: cross_entropy, nll_loss, mse_loss.
#pragma once
#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// log(softmax(x)) along dim, computed stably as (x - max) - log(sum(exp(x - max))).
Tensor log_softmax(const Tensor& x, int64_t dim);
/// exp(x_i) / sum_j exp(x_j) along dim, stable (shifted by the max).
Tensor softmax(const Tensor& x, int64_t dim);
/// Negative log-likelihood, mean over the batch: -mean_i logp[i, target[i]]; logp is (N, C).
Tensor nll_loss(const Tensor& logp, const std::vector<int64_t>& target);
/// Cross-entropy of logits (N, C) with integer class targets in [0, C), mean over the batch
/// (PyTorch's F.cross_entropy with reduction='mean').
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& target);
/// Mean squared error, mean((input - target)^2); both must have the same shape.
Tensor mse_loss(const Tensor& input, const Tensor& target);

}  // namespace normlab::autograd
