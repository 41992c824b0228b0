// Parameter initializers: fan computation, gains, and the in-place uniform/normal fills they use.
#include "nn/init.h"

#include <cmath>
#include <sstream>

namespace normlab::nn::init {

using autograd::dispatch;
using autograd::shape_str;

namespace {

// Python's repr of a float for messages ("1.0", "-0.5").
std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Writes f() into every element of t, row-major, with grad mode off.
template <typename F>
void fill_with(const Tensor& t, F&& f) {
  autograd::NoGradGuard no_grad;
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = static_cast<T>(f());
  });
}

// fan_in or fan_out by mode name.
double correct_fan(const Tensor& t, const std::string& mode, const char* op) {
  if (mode != "fan_in" && mode != "fan_out")
    throw Error(std::string(op) + ": mode '" + mode + "' is not supported, please use one of 'fan_in', 'fan_out'");
  const Fans f = calculate_fan_in_and_fan_out(t);
  return static_cast<double>(mode == "fan_in" ? f.fan_in : f.fan_out);
}

}  // namespace

Fans calculate_fan_in_and_fan_out(const Tensor& t) {
  if (t.dim() < 2)
    throw Error("calculate_fan_in_and_fan_out: fan in and fan out can not be computed for a tensor with fewer "
                "than 2 dimensions, got shape " + shape_str(t.shape()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return Fans{t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  static const char* const kLinear[] = {"linear",           "conv1d",           "conv2d",          "conv3d",
                                        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  for (const char* name : kLinear)
    if (nonlinearity == name) return 1;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    if (!std::isfinite(slope)) throw Error("calculate_gain: negative_slope " + num(slope) + " is not a valid number");
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4;
  throw Error("calculate_gain: unsupported nonlinearity '" + nonlinearity +
              "' (expected linear, conv1d, conv2d, conv3d, conv_transpose1d/2d/3d, sigmoid, tanh, relu, "
              "leaky_relu or selu)");
}

const Tensor& uniform_(const Tensor& t, double a, double b, Generator& gen) {
  if (!std::isfinite(a) || !std::isfinite(b))
    throw Error("uniform_: expected finite bounds, got a=" + num(a) + ", b=" + num(b));
  if (a > b) throw Error("uniform_: expected a <= b for the range [a, b), got a=" + num(a) + " > b=" + num(b));
  fill_with(t, [&] { return gen.uniform(a, b); });
  return t;
}

const Tensor& normal_(const Tensor& t, double mean, double std, Generator& gen) {
  if (!std::isfinite(mean) || !std::isfinite(std))
    throw Error("normal_: expected a finite mean and std, got mean=" + num(mean) + ", std=" + num(std));
  if (std < 0) throw Error("normal_: expected std >= 0, got std=" + num(std));
  fill_with(t, [&] { return mean + std * gen.normal(); });
  return t;
}

const Tensor& constant_(const Tensor& t, double value) {
  fill_with(t, [&] { return value; });
  return t;
}

const Tensor& zeros_(const Tensor& t) { return constant_(t, 0); }
const Tensor& ones_(const Tensor& t) { return constant_(t, 1); }

const Tensor& kaiming_uniform_(const Tensor& t, Generator& gen, double a, const std::string& mode,
                               const std::string& nonlinearity) {
  const double fan = correct_fan(t, mode, "kaiming_uniform_");
  const double gain = calculate_gain(nonlinearity, a);
  if (t.numel() == 0) return t;  // PyTorch: "Initializing zero-element tensors is a no-op"
  const double bound = gain * std::sqrt(3.0 / fan);  // = sqrt(3) * std, std = gain / sqrt(fan)
  return uniform_(t, -bound, bound, gen);
}

const Tensor& kaiming_normal_(const Tensor& t, Generator& gen, double a, const std::string& mode,
                              const std::string& nonlinearity) {
  const double fan = correct_fan(t, mode, "kaiming_normal_");
  const double gain = calculate_gain(nonlinearity, a);
  if (t.numel() == 0) return t;
  return normal_(t, 0, gain / std::sqrt(fan), gen);
}

const Tensor& xavier_uniform_(const Tensor& t, Generator& gen, double gain) {
  const Fans f = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(f.fan_in + f.fan_out));  // sqrt(3) * std
  return uniform_(t, -bound, bound, gen);
}

const Tensor& xavier_normal_(const Tensor& t, Generator& gen, double gain) {
  const Fans f = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  return normal_(t, 0, gain * std::sqrt(2.0 / static_cast<double>(f.fan_in + f.fan_out)), gen);
}

}  // namespace normlab::nn::init
