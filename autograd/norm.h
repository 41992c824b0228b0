// Differentiable normalization ops with PyTorch's torch.nn.functional semantics: layer_norm,
// batch_norm, group_norm, rms_norm (nn/ wraps them in modules with parameters and running
// statistics). Each forward is one fused kernel call (autograd/kernels/norm.h) and its backward,
// recorded right after it, one fused backward kernel call. In a create_graph pass that backward is
// one recorded op whose own backward is the double-backward formula (autograd/norm_grad.h), for
// layer_norm, batch_norm (training and eval), group_norm and rms_norm.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// LayerNorm over the trailing dims given by normalized_shape (such as {3}, {1, 3}, {2, 3}).
/// x (*, normalized_shape) -> same shape; y = (x - mu) / sqrt(var + eps) * weight + bias with the
/// mean and the *biased* variance of each row of numel(normalized_shape) values. weight and bias have
/// shape normalized_shape, or are undefined Tensors (then 1 and 0).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

/// BatchNorm: x (N, C, *) -> same shape, statistics per channel over the m = N * prod(*) values.
/// training: normalizes with the batch mean and *biased* variance and, if running_mean/running_var
/// (C) are defined, updates them in place (no grad) with the factor f = momentum:
///   running_mean = (1 - f) running_mean + f mean,  running_var = (1 - f) running_var + f var m/(m-1)
/// (the *unbiased* variance). PyTorch's momentum=None (a cumulative average) is f = 1/num_batches_tracked,
/// which the module passes. Training with m == 1 is an error, as in PyTorch.
/// !training: normalizes with running_mean and running_var (both must be defined).
/// weight, bias: (C) or undefined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum = 0.1, double eps = 1e-5);

/// Checks a BatchNorm momentum (the running-average factor f above): in [0, 1], NaN refused;
/// otherwise a normlab::Error that starts with who (the op or module).
void check_momentum(double momentum, const std::string& who);

/// Group normalization, PyTorch's F.group_norm.
/// GroupNorm: x (N, C, *) -> same shape; the C channels form num_groups groups of C/num_groups
/// channels, each (sample, group) normalized with its own mean and biased variance, then
/// y = xhat * weight_c + bias_c per channel. weight, bias: (C) or undefined.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

/// RMSNorm (PyTorch 2.4's F.rms_norm): x (*, normalized_shape) -> same shape;
/// y = x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims. eps = nullopt means
/// the machine epsilon of x's dtype (torch.finfo(dtype).eps), PyTorch's default. weight: normalized_shape
/// or undefined.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);

}  // namespace normlab::autograd
