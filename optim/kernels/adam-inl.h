// Adam / AdamW update kernel, per-target Highway body (included once per target by adam.cc).
// The flags are template parameters, so the loop holds no branches; one loop reads param, grad and
// the moments once and writes param and the moments once: the step is a single pass over memory.

#if defined(NORMLAB_OPTIM_KERNELS_ADAM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_OPTIM_KERNELS_ADAM_INL_H_
#undef NORMLAB_OPTIM_KERNELS_ADAM_INL_H_
#else
#define NORMLAB_OPTIM_KERNELS_ADAM_INL_H_
#endif

#include "hwy/highway.h"
#include "optim/kernels/adam.h"
#include "autograd/kernels/loop-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::optim::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using autograd::kernels::HWY_NAMESPACE::ForRow;
using autograd::kernels::HWY_NAMESPACE::WithFlag;

// How weight decay enters a step.
enum class Decay : int { None, L2, Decoupled };

// One Adam step over n elements with the flags fixed at compile time, in ref::adam_step's order of
// operations, each rounded to T (Mul then Add, never MulAdd; adam.cc turns off the compiler's own
// contraction of the two). f = adam_factors(s), computed by the caller outside the target's code,
// where no FMA can enter 1 - lr * weight_decay. Full vectors, then a one-lane tail.
template <typename T, Decay kDecay, bool kAmsgrad, bool kMaximize>
HWY_NOINLINE void AdamLoop(const AdamStep& s, const AdamFactors& f, int64_t n, T* HWY_RESTRICT param,
                           const T* HWY_RESTRICT grad, T* HWY_RESTRICT exp_avg, T* HWY_RESTRICT exp_avg_sq,
                           T* HWY_RESTRICT max_exp_avg_sq) {
  const T decay = static_cast<T>(f.decay), wd = static_cast<T>(s.weight_decay);
  const T beta1 = static_cast<T>(s.beta1), beta2 = static_cast<T>(s.beta2);
  const T keep1 = static_cast<T>(f.keep1), keep2 = static_cast<T>(f.keep2);
  const T neg_step_size = static_cast<T>(f.neg_step_size), bc2_sqrt = static_cast<T>(f.bias_correction2_sqrt);
  const T eps = static_cast<T>(s.eps);
  const auto body = [&](auto d, int64_t i) {
    auto p = hn::LoadU(d, param + i);
    if constexpr (kDecay == Decay::Decoupled) p = hn::Mul(p, hn::Set(d, decay));  // param * (1 - lr wd)
    auto g = hn::LoadU(d, grad + i);
    if constexpr (kMaximize) g = hn::Neg(g);
    if constexpr (kDecay == Decay::L2) g = hn::Add(g, hn::Mul(hn::Set(d, wd), p));  // g + wd param
    // exp_avg * beta1 + (1 - beta1) g;  exp_avg_sq * beta2 + ((1 - beta2) g) g
    const auto m = hn::Add(hn::Mul(hn::LoadU(d, exp_avg + i), hn::Set(d, beta1)), hn::Mul(hn::Set(d, keep1), g));
    const auto v = hn::Add(hn::Mul(hn::LoadU(d, exp_avg_sq + i), hn::Set(d, beta2)),
                           hn::Mul(hn::Mul(hn::Set(d, keep2), g), g));
    hn::StoreU(m, d, exp_avg + i);
    hn::StoreU(v, d, exp_avg_sq + i);
    auto vhat = v;
    // torch.maximum: v where old < v or v is NaN, else old (an old NaN stays). IsNaN, not Ne(v, v):
    // Highway 1.0's AVX-512 Ne is an ordered compare, false for NaN.
    if constexpr (kAmsgrad) {
      const auto old = hn::LoadU(d, max_exp_avg_sq + i);
      vhat = hn::IfThenElse(hn::Or(hn::Lt(old, v), hn::IsNaN(v)), v, old);
      hn::StoreU(vhat, d, max_exp_avg_sq + i);
    }
    // denom = sqrt(vhat) / sqrt(bias_correction2) + eps;  param + (-step_size exp_avg) / denom
    const auto denom = hn::Add(hn::Div(hn::Sqrt(vhat), hn::Set(d, bc2_sqrt)), hn::Set(d, eps));
    hn::StoreU(hn::Add(p, hn::Div(hn::Mul(hn::Set(d, neg_step_size), m), denom)), d, param + i);
  };
  ForRow<T>(n, body);
}

// Picks the AdamLoop instance for the flags of s (once per parameter, not per element).
template <typename T>
void AdamStepT(const AdamStep& s, const AdamFactors& f, int64_t n, T* param, const T* grad, T* exp_avg,
               T* exp_avg_sq, T* max_exp_avg_sq) {
  WithFlag(s.amsgrad, [&](auto amsgrad) {
    WithFlag(s.maximize, [&](auto maximize) {
      constexpr bool kAms = decltype(amsgrad)::value, kMax = decltype(maximize)::value;
      if (s.weight_decay == 0)
        AdamLoop<T, Decay::None, kAms, kMax>(s, f, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
      else if (s.decoupled)
        AdamLoop<T, Decay::Decoupled, kAms, kMax>(s, f, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
      else
        AdamLoop<T, Decay::L2, kAms, kMax>(s, f, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
    });
  });
}

}  // namespace normlab::optim::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
