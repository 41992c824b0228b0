// e^x for kernels whose arguments are bounded (softmax numerators e^(s - max) <= 1, GELU's
// e^(-2u) clamped at e^80), per-target Highway code included by the kernels' -inl.h files.
//
// Float lanes: x is clamped to [-87.33, 88.37] (e^x from 2^-126 to 2^127: normal floats, no
// overflow), split as x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2 (ln2 in two parts,
// so r is exact to float precision), e^r = 1 + r + r^2 P(r) with Cephes' degree-5 minimax P (expf),
// and 2^n built directly in the exponent bits. About 16 vector operations where Highway's
// general hn::Exp takes about 25; within 2 ulp of the exact e^x (kernels_test checks it through
// GELU against a float64 reference). Double lanes use hn::Exp.

#if defined(NORMLAB_AUTOGRAD_KERNELS_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_EXP_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_EXP_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_EXP_INL_H_
#endif

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V = hn::Vec<D>>
HWY_INLINE V ExpBounded(D d, V x) {
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) != 4) {
    return hn::Exp(d, x);
  } else {
    const hn::RebindToSigned<D> di;
    x = hn::Min(hn::Max(x, hn::Set(d, -87.33f)), hn::Set(d, 88.37f));
    const V n = hn::Round(hn::Mul(x, hn::Set(d, 1.44269504088896341f)));  // x / ln2
    // r = x - n ln2, ln2 = 0.693359375 - 2.12194440e-4 (the first part exact in 10 bits).
    V r = hn::NegMulAdd(n, hn::Set(d, 0.693359375f), x);
    r = hn::NegMulAdd(n, hn::Set(d, -2.12194440e-4f), r);
    V p = hn::Set(d, 1.9875691500e-4f);
    p = hn::MulAdd(p, r, hn::Set(d, 1.3981999507e-3f));
    p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
    p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
    p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
    p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
    const V er = hn::MulAdd(p, hn::Mul(r, r), hn::Add(r, hn::Set(d, 1.0f)));  // e^r
    // 2^n: n + 127 in the exponent field (1 .. 254 for the clamped x).
    const auto bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
    return hn::Mul(er, hn::BitCast(d, bits));
  }
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
