// Adam / AdamW update kernel (public header, no SIMD types): one fused pass over a parameter, its
// gradient and its moment estimates. Highway body in adam-inl.h, dispatch in adam.cc; the scalar
// reference in namespace ref below defines what every SIMD target must compute, bit for bit.
#pragma once
#include <cmath>
#include <cstdint>

namespace normlab::optim::kernels {

// The hyper-parameters of one Adam or AdamW step on one parameter (see optim/adam.h).
struct AdamStep {
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  // 0: no decay term
  bool decoupled = false;   // AdamW: theta *= 1 - lr * weight_decay; Adam: g += weight_decay * theta
  bool amsgrad = false;     // keep max_exp_avg_sq (otherwise it is neither read nor written, may be null)
  bool maximize = false;
  int64_t step = 1;         // this parameter's step count, this step included (1 on its first step)
};

// The per-step numbers, computed in double from the hyper-parameters as PyTorch computes them in
// Python floats (torch/optim/adam.py, _single_tensor_adam), before they are rounded to the
// parameter's dtype:
//   bias_correction1 = 1 - beta1^step,  bias_correction2 = 1 - beta2^step
//   step_size = lr / bias_correction1,  bias_correction2_sqrt = sqrt(bias_correction2)
struct AdamFactors {
  double decay;                  // AdamW: 1 - lr * weight_decay (the factor of param.mul_)
  double keep1, keep2;           // 1 - beta1, 1 - beta2 (add_'s alpha and addcmul_'s value)
  double neg_step_size;          // -step_size (addcdiv_'s value)
  double bias_correction2_sqrt;  // the divisor of sqrt(exp_avg_sq)
};

inline AdamFactors adam_factors(const AdamStep& s) {
  const double step = static_cast<double>(s.step);
  const double bias_correction1 = 1 - std::pow(s.beta1, step);
  const double bias_correction2 = 1 - std::pow(s.beta2, step);
  const double step_size = s.lr / bias_correction1;
  return {.decay = 1 - s.lr * s.weight_decay,
          .keep1 = 1 - s.beta1,
          .keep2 = 1 - s.beta2,
          .neg_step_size = -step_size,
          .bias_correction2_sqrt = std::sqrt(bias_correction2)};
}

// One Adam (or AdamW) step in place over n elements: param, exp_avg, exp_avg_sq (n each) and
// max_exp_avg_sq (n, or null without amsgrad) are updated, grad (n) is read. PyTorch 1.13's
// single-tensor rule (foreach=False), per element, each operation rounded to T (the scalar factors,
// from adam_factors, rounded to T first as PyTorch passes them to its kernels):
//   AdamW:       param = param * decay                          param.mul_(1 - lr * wd)
//   g = maximize ? -grad : grad
//   Adam, wd:    g = g + weight_decay * param                   grad.add(param, alpha=wd)
//   exp_avg    = exp_avg * beta1 + keep1 * g                    exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
//   exp_avg_sq = exp_avg_sq * beta2 + (keep2 * g) * g           exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
//   amsgrad:     max_exp_avg_sq = maximum(max_exp_avg_sq, exp_avg_sq)   (NaN if either is, as torch.maximum)
//   denom = sqrt(amsgrad ? max_exp_avg_sq : exp_avg_sq) / bias_correction2_sqrt + eps
//   param = param + (neg_step_size * exp_avg) / denom          param.addcdiv_(exp_avg, denom, value=-step_size)
// No product is fused with the sum after it (no FMA), so every target computes the same bits; this
// is PyTorch's arithmetic with its portable (non-AVX2) kernels. Its AVX2 kernels fuse the two
// moment updates and the weight-decay term into FMAs instead (an ulp or so apart per step).
void adam_step(const AdamStep& s, int64_t n, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
               float* max_exp_avg_sq);
void adam_step(const AdamStep& s, int64_t n, double* param, const double* grad, double* exp_avg,
               double* exp_avg_sq, double* max_exp_avg_sq);
// The name of the Highway target the Adam dispatcher picks now (e.g. "AVX2"), for tests.
const char* adam_active_target();

// ---- Scalar reference: what the Highway kernel must compute --------------------------------------
namespace ref {

// On x86-64 this is compiled for the baseline ISA, which has no FMA: nothing here is contracted.
template <typename T>
void adam_step(const AdamStep& s, int64_t n, T* param, const T* grad, T* exp_avg, T* exp_avg_sq,
               T* max_exp_avg_sq) {
  const AdamFactors f = adam_factors(s);
  const T decay = static_cast<T>(f.decay), wd = static_cast<T>(s.weight_decay);
  const T beta1 = static_cast<T>(s.beta1), beta2 = static_cast<T>(s.beta2);
  const T keep1 = static_cast<T>(f.keep1), keep2 = static_cast<T>(f.keep2);
  const T neg_step_size = static_cast<T>(f.neg_step_size), bc2_sqrt = static_cast<T>(f.bias_correction2_sqrt);
  const T eps = static_cast<T>(s.eps);
  for (int64_t i = 0; i < n; ++i) {
    T p = param[i];
    if (s.decoupled && s.weight_decay != 0) p = p * decay;
    T g = s.maximize ? -grad[i] : grad[i];
    if (!s.decoupled && s.weight_decay != 0) g = g + wd * p;
    const T m = exp_avg[i] * beta1 + keep1 * g;
    const T v = exp_avg_sq[i] * beta2 + (keep2 * g) * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    T vhat = v;
    if (s.amsgrad) {
      const T old = max_exp_avg_sq[i];
      vhat = (old < v || std::isnan(v)) ? v : old;  // torch.maximum: NaN if either is NaN
      max_exp_avg_sq[i] = vhat;
    }
    const T denom = std::sqrt(vhat) / bc2_sqrt + eps;
    param[i] = p + (neg_step_size * m) / denom;
  }
}

}  // namespace ref
}  // namespace normlab::optim::kernels
