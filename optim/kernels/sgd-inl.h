// SGD update kernel, per-target Highway body (included once per target by sgd.cc).
// The flags are template parameters, so the loop holds no branches; one loop reads theta, grad and
// buf once and writes theta and buf once: the step is a single pass over memory (it is memory-bound).

#if defined(NORMLAB_OPTIM_KERNELS_SGD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_OPTIM_KERNELS_SGD_INL_H_
#undef NORMLAB_OPTIM_KERNELS_SGD_INL_H_
#else
#define NORMLAB_OPTIM_KERNELS_SGD_INL_H_
#endif

#include "hwy/highway.h"
#include "autograd/kernels/loop-inl.h"
#include "optim/kernels/sgd.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::optim::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using autograd::kernels::HWY_NAMESPACE::ForRow;
using autograd::kernels::HWY_NAMESPACE::WithFlag;

// How the momentum buffer is treated in a step.
enum class Momentum : int { None, First, Update };

// One SGD step over n elements with the flags fixed at compile time (full vectors, then a one-lane tail).
template <typename T, bool kMaximize, bool kDecay, Momentum kMomentum, bool kNesterov>
HWY_NOINLINE void SgdLoop(const SGDStep& s, int64_t n, T* HWY_RESTRICT theta, const T* HWY_RESTRICT grad,
                          T* HWY_RESTRICT buf) {
  const T lr = static_cast<T>(s.lr), m = static_cast<T>(s.momentum);
  const T keep = static_cast<T>(1 - s.dampening), wd = static_cast<T>(s.weight_decay);
  const auto body = [&](auto d, int64_t i) {
    const auto p = hn::LoadU(d, theta + i);
    auto g = hn::LoadU(d, grad + i);
    if constexpr (kMaximize) g = hn::Neg(g);
    if constexpr (kDecay) g = hn::MulAdd(hn::Set(d, wd), p, g);  // g + wd theta
    if constexpr (kMomentum != Momentum::None) {
      auto b = g;  // first step: buf = g, no dampening
      if constexpr (kMomentum == Momentum::Update)  // (buf m) + (1 - dampening) g, as PyTorch's mul_ then add_
        b = hn::MulAdd(hn::Set(d, keep), g, hn::Mul(hn::LoadU(d, buf + i), hn::Set(d, m)));
      hn::StoreU(b, d, buf + i);
      if constexpr (kNesterov)
        g = hn::MulAdd(hn::Set(d, m), b, g);  // g + m buf
      else
        g = b;
    }
    hn::StoreU(hn::NegMulAdd(hn::Set(d, lr), g, p), d, theta + i);  // theta - lr g
  };
  ForRow<T>(n, body);
}

// Picks the SgdLoop instance for the flags of s (once per parameter, not per element).
template <typename T>
void SgdStep(const SGDStep& s, int64_t n, T* theta, const T* grad, T* buf) {
  WithFlag(s.maximize, [&](auto maximize) {
    WithFlag(s.weight_decay != 0, [&](auto decay) {
      constexpr bool kMax = decltype(maximize)::value, kDecay = decltype(decay)::value;
      if (s.momentum == 0) return SgdLoop<T, kMax, kDecay, Momentum::None, false>(s, n, theta, grad, buf);
      WithFlag(s.nesterov, [&](auto nesterov) {
        constexpr bool kNest = decltype(nesterov)::value;
        if (s.first)
          SgdLoop<T, kMax, kDecay, Momentum::First, kNest>(s, n, theta, grad, buf);
        else
          SgdLoop<T, kMax, kDecay, Momentum::Update, kNest>(s, n, theta, grad, buf);
      });
    });
  });
}

}  // namespace normlab::optim::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
