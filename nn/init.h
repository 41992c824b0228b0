// Parameter initializers (PyTorch's torch.nn.init): uniform, normal, constant, kaiming, xavier.
// Each fills a tensor in place under no_grad, draws from an explicit Generator, and returns it.
#pragma once
#include <optional>
#include <string>

#include "autograd/autograd.h"

namespace normlab::nn::init {

using autograd::Generator;
using autograd::Tensor;

/// Fan-in and fan-out of a weight of rank >= 2, as PyTorch computes them:
/// fan_in = size(1) * r, fan_out = size(0) * r, with r = prod(size(2:)) the receptive field.
struct Fans {
  int64_t fan_in = 0;  ///< size(1) times the receptive field
  int64_t fan_out = 0;  ///< size(0) times the receptive field
};
Fans calculate_fan_in_and_fan_out(const Tensor& t);  ///< The fans of t (rank >= 2, else an error).

/// The recommended gain for a nonlinearity (PyTorch's calculate_gain). 1 for "linear", "conv1d",
/// "conv2d", "conv3d", "conv_transpose1d/2d/3d" and "sigmoid"; 5/3 for "tanh"; sqrt(2) for
/// "relu"; sqrt(2 / (1 + slope^2)) for "leaky_relu" (slope = param, default 0.01); 3/4 for "selu".
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);

/// t ~ U(a, b), a <= b.
const Tensor& uniform_(const Tensor& t, double a, double b, Generator& gen);
/// t ~ N(mean, std^2), std >= 0.
const Tensor& normal_(const Tensor& t, double mean, double std, Generator& gen);
/// t = value everywhere.
const Tensor& constant_(const Tensor& t, double value);
const Tensor& zeros_(const Tensor& t);  ///< t = 0 everywhere.
const Tensor& ones_(const Tensor& t);  ///< t = 1 everywhere.

/// He et al.\ 2015, uniform: t ~ U(-bound, bound), bound = gain * sqrt(3 / fan), where
/// gain = calculate_gain(nonlinearity, a) and fan is fan_in or fan_out (mode "fan_in"/"fan_out").
/// With a = sqrt(5) and the defaults this is Linear's default weight init, bound = 1/sqrt(fan_in).
const Tensor& kaiming_uniform_(const Tensor& t, Generator& gen, double a = 0, const std::string& mode = "fan_in",
                               const std::string& nonlinearity = "leaky_relu");
/// He et al.\ 2015, normal: t ~ N(0, std^2), std = gain / sqrt(fan).
const Tensor& kaiming_normal_(const Tensor& t, Generator& gen, double a = 0, const std::string& mode = "fan_in",
                              const std::string& nonlinearity = "leaky_relu");
/// Glorot & Bengio 2010, uniform: t ~ U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)).
const Tensor& xavier_uniform_(const Tensor& t, Generator& gen, double gain = 1);
/// Glorot & Bengio 2010, normal: t ~ N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
const Tensor& xavier_normal_(const Tensor& t, Generator& gen, double gain = 1);

}  // namespace normlab::nn::init
