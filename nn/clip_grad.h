// Gradient clipping by total norm (PyTorch's torch.nn.utils.clip_grad_norm_, as in 1.13).
#pragma once
#include <vector>

#include "autograd/tensor.h"

namespace normlab::nn {

/// Scales the gradients of `params` in place so that their total norm is at most max_norm, and
/// returns the total norm before scaling. Parameters without a gradient are skipped.
///   norm_i = (sum_j |g_ij|^p)^(1/p) of each gradient, total = (sum_i norm_i^p)^(1/p)
///   (p = norm_type; for p = inf, norm_i = max_j |g_ij| and total = max_i norm_i),
///   coef = min(max_norm / (total + 1e-6), 1); every gradient g_i *= coef (always, as PyTorch 1.13,
///   so a coef of exactly 1 leaves the values unchanged).
/// The sums run in double, in parameter order then element order (independent of the thread count).
/// norm_type must be > 0 (inf allowed) and max_norm >= 0, else normlab::Error. With
/// error_if_nonfinite, a NaN or infinite total throws normlab::Error and leaves the gradients as they
/// were; without it, they are scaled by the coef computed from the non-finite total (NaN, or 0 for inf).
double clip_grad_norm_(const std::vector<autograd::Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

}  // namespace normlab::nn
