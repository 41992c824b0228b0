// Elementwise kernels, per-target Highway bodies (included once per target by elementwise.cc).
// Each loop is written once: full vectors, then a one-lane tail with the same lambda, so lengths
// that are not a multiple of the vector size need no masked loads (which may fault on AMD AVX2).

#if defined(NORMLAB_AUTOGRAD_KERNELS_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_ELEMENTWISE_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_ELEMENTWISE_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_ELEMENTWISE_INL_H_
#endif

#include <cmath>
#include <limits>

#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/exp-inl.h"
#include "autograd/kernels/loop-inl.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Stores v at p: a non-temporal store when kStream (p then vector-aligned), else a plain one.
template <bool kStream, class D, class V, typename T = hn::TFromD<D>>
HWY_INLINE void Put(D d, V v, T* HWY_RESTRICT p) {
  if constexpr (kStream) hn::Stream(v, d, p);
  else hn::StoreU(v, d, p);
}

// The start of a streamed output: one-lane steps body(d1, i) for i < n until out + i is
// vector-aligned (non-temporal vector stores need it); returns that i (0 when !kStream).
template <bool kStream, typename T, class Body>
HWY_INLINE int64_t AlignHead(int64_t n, const T* out, const Body& body) {
  int64_t i = 0;
  if constexpr (kStream) {
    const hn::CappedTag<T, 1> d1;
    const uintptr_t align = hn::Lanes(hn::ScalableTag<T>()) * sizeof(T);
    for (; i < n && reinterpret_cast<uintptr_t>(out + i) % align != 0; ++i) body(d1, i);
  }
  return i;
}

// y[i] = f(d, x[i]) for i < n; y may alias x. With kStream (an output too large to stay cached,
// stream.h) the vector stores are non-temporal, and flushed at the end (before another thread may
// read y). Every lane goes through the same f whichever store writes it.
template <bool kStream, typename T, class F>
HWY_INLINE void Map1(int64_t n, const T* x, T* y, const F& f) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = AlignHead<kStream>(n, y, [&](auto dt, int64_t j) { hn::StoreU(f(dt, hn::LoadU(dt, x + j)), dt, y + j); });
  // Four vectors per iteration (all loads before the stores): one vector per iteration leaves
  // the loop's own overhead on the critical path when the data comes from L1/L2.
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N), v2 = hn::LoadU(d, x + i + 2 * N),
               v3 = hn::LoadU(d, x + i + 3 * N);
    Put<kStream>(d, f(d, v0), y + i), Put<kStream>(d, f(d, v1), y + i + N);
    Put<kStream>(d, f(d, v2), y + i + 2 * N), Put<kStream>(d, f(d, v3), y + i + 3 * N);
  }
  for (; i + N <= n; i += N) Put<kStream>(d, f(d, hn::LoadU(d, x + i)), y + i);
  for (; i < n; ++i) hn::StoreU(f(d1, hn::LoadU(d1, x + i)), d1, y + i);
  if constexpr (kStream) hwy::FlushStream();
}

// z[i] = f(d, x[i], y[i]) for i < n; z may alias x or y. kStream as for Map1.
template <bool kStream, typename T, class F>
HWY_INLINE void Map2(int64_t n, const T* x, const T* y, T* z, const F& f) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = AlignHead<kStream>(
      n, z, [&](auto dt, int64_t j) { hn::StoreU(f(dt, hn::LoadU(dt, x + j), hn::LoadU(dt, y + j)), dt, z + j); });
  for (; i + 4 * N <= n; i += 4 * N) {  // four vectors per iteration, as Map1
    const auto x0 = hn::LoadU(d, x + i), x1 = hn::LoadU(d, x + i + N), x2 = hn::LoadU(d, x + i + 2 * N),
               x3 = hn::LoadU(d, x + i + 3 * N);
    const auto y0 = hn::LoadU(d, y + i), y1 = hn::LoadU(d, y + i + N), y2 = hn::LoadU(d, y + i + 2 * N),
               y3 = hn::LoadU(d, y + i + 3 * N);
    Put<kStream>(d, f(d, x0, y0), z + i), Put<kStream>(d, f(d, x1, y1), z + i + N);
    Put<kStream>(d, f(d, x2, y2), z + i + 2 * N), Put<kStream>(d, f(d, x3, y3), z + i + 3 * N);
  }
  for (; i + N <= n; i += N) Put<kStream>(d, f(d, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), z + i);
  for (; i < n; ++i) hn::StoreU(f(d1, hn::LoadU(d1, x + i), hn::LoadU(d1, y + i)), d1, z + i);
  if constexpr (kStream) hwy::FlushStream();
}

// ---- math with NaN/overflow handled (Highway 1.0.3's contrib/math does not propagate NaN) ----

template <class D, class V>
HWY_INLINE V SafeExp(D d, V x) {
  using T = hn::TFromD<D>;
  // Above log(max) the contrib Exp is out of its valid range: the answer is +inf.
  const V hi = hn::Set(d, static_cast<T>(sizeof(T) == 4 ? 88.72283905206835 : 709.782712893384));
  V r = hn::Exp(d, x);
  r = hn::IfThenElse(hn::Gt(x, hi), hn::Set(d, std::numeric_limits<T>::infinity()), r);
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

template <class D, class V>
HWY_INLINE V SafeLog(D d, V x) {
  using T = hn::TFromD<D>;
  const V zero = hn::Zero(d), inf = hn::Set(d, std::numeric_limits<T>::infinity());
  V r = hn::Log(d, x);
  r = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  const auto bad = hn::Or(hn::Lt(x, zero), hn::IsNaN(x));
  return hn::IfThenElse(bad, hn::Set(d, std::numeric_limits<T>::quiet_NaN()), r);
}

template <class D, class V>
HWY_INLINE V SafeTanh(D d, V x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Tanh(d, x));
}

// sigmoid(x) = 1 / (1 + e^-x) = e^x / (1 + e^x); with e = exp(-|x|) in (0, 1] both forms are exact
// and never overflow: s = 1 / (1 + e) for x >= 0, e * s for x < 0.
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  const V e = SafeExp(d, hn::Neg(hn::Abs(x)));
  const V s = hn::Div(hn::Set(d, 1), hn::Add(hn::Set(d, 1), e));
  return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, s), s);
}

// x^p for a scalar exponent: repeated squaring for small integer p (its relative error grows
// like |p| ulp, so only up to 64), else exp(p log|x|), with the sign of x for odd integer p (so a
// negative base works as with std::pow; a non-integer power of a negative base is NaN) and 0^p
// handled as std::pow does.
template <class D, class V>
HWY_INLINE V PowScalar(D d, V x, double p) {
  using T = hn::TFromD<D>;
  const bool integral = p == std::floor(p);
  if (integral && std::fabs(p) <= 64) {
    int64_t e = static_cast<int64_t>(std::fabs(p));
    V result = hn::Set(d, 1), base = x;
    while (e) {
      if (e & 1) result = hn::Mul(result, base);
      base = hn::Mul(base, base);
      e >>= 1;
    }
    return p < 0 ? hn::Div(hn::Set(d, 1), result) : result;
  }
  const V zero = hn::Zero(d);
  V r = SafeExp(d, hn::Mul(hn::Set(d, static_cast<T>(p)), SafeLog(d, integral ? hn::Abs(x) : x)));
  if (integral && std::fmod(p, 2) != 0) r = hn::CopySign(r, x);
  const V at_zero = p > 0 ? zero : hn::Set(d, std::numeric_limits<T>::infinity());
  return hn::IfThenElse(hn::Eq(x, zero), at_zero, r);
}

// GELU, tanh form: 0.5 x (1 + tanh(u)), u = c (x + a x^3). Computed as x sigmoid(2u), the same
// function (0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u))): one exp and one division, where tanh costs an
// expm1 and a division. e^(-2u) is clamped below overflow (e^80), where x sigmoid(2u) is ~0, so the
// bounded exp (exp-inl.h) serves.
template <class D, class V>
HWY_INLINE V GeluSigmoid(D d, V x) {  // sigmoid(2u)
  using T = hn::TFromD<D>;
  const V c2 = hn::Set(d, static_cast<T>(2 * ref::kGeluC)), a = hn::Set(d, static_cast<T>(ref::kGeluA));
  const V u2 = hn::Mul(c2, hn::MulAdd(hn::Mul(a, hn::Mul(x, x)), x, x));
  const V e = ExpBounded(d, hn::Min(hn::Neg(u2), hn::Set(d, static_cast<T>(80))));
  return hn::Div(hn::Set(d, 1), hn::Add(hn::Set(d, 1), e));
}

template <class D, class V>
HWY_INLINE V Gelu(D d, V x) {
  return hn::Mul(x, GeluSigmoid(d, x));
}

// d/dx [x s], s = sigmoid(2u): s + 2 x s (1 - s) u', u' = c (1 + 3 a x^2)
// (= 0.5 (1 + t) + 0.5 x (1 - t^2) u' with t = tanh(u) = 2 s - 1), from s.
// The sum is written as the multiply-add GCC forms from `s + right` in GeluGrad's context, so that
// g times this derivative has the bits of GeluGrad's.
template <class D, class V>
HWY_INLINE V GeluDerivative(D d, V x, V s) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, 1);
  const V du = hn::Mul(hn::Set(d, static_cast<T>(ref::kGeluC)),
                       hn::MulAdd(hn::Mul(hn::Set(d, static_cast<T>(3 * ref::kGeluA)), x), x, one));
  return hn::MulAdd(hn::Add(x, x), hn::Mul(hn::Mul(s, hn::Sub(one, s)), du), s);
}

// The same with s computed from x.
template <class D, class V>
HWY_INLINE V GeluGrad(D d, V x, V g) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, 1);
  const V s = GeluSigmoid(d, x);
  const V du = hn::Mul(hn::Set(d, static_cast<T>(ref::kGeluC)),
                       hn::MulAdd(hn::Mul(hn::Set(d, static_cast<T>(3 * ref::kGeluA)), x), x, one));
  const V right = hn::Mul(hn::Add(x, x), hn::Mul(hn::Mul(s, hn::Sub(one, s)), du));
  return hn::Mul(g, hn::Add(s, right));
}

// ---- Kernels -------------------------------------------------------------------------------------

template <bool kStream, typename T, class F>
HWY_INLINE void BinaryRow(int64_t n, const T* a, int64_t sa, const T* b, int64_t sb, T* out, const F& f) {
  const hn::CappedTag<T, 1> d1;
  if (n == 0) return;  // nothing to read: a scalar operand may be absent (empty, null)
  if (sa == 1 && sb == 1) {
    Map2<kStream>(n, a, b, out, f);
  } else if (sa == 1 && sb == 0) {
    const T bv = b[0];
    Map1<kStream>(n, a, out, [&](auto d, auto va) { return f(d, va, hn::Set(d, bv)); });
  } else if (sa == 0 && sb == 1) {
    const T av = a[0];
    Map1<kStream>(n, b, out, [&](auto d, auto vb) { return f(d, hn::Set(d, av), vb); });
  } else {
    for (int64_t i = 0; i < n; ++i)
      hn::StoreU(f(d1, hn::Set(d1, a[i * sa]), hn::Set(d1, b[i * sb])), d1, out + i);
  }
}

template <bool kStream, typename T, class F>
HWY_INLINE void BinaryPlanLoop(const BroadcastPlan& p, const T* a, const T* b, T* out, const F& f) {
  const int last = p.rank - 1;
  const int64_t n = p.size[last];
  int64_t outer = 1;
  for (int d = 0; d < last; ++d) outer *= p.size[d];
  int64_t idx[kMaxDims] = {};
  for (int64_t o = 0; o < outer; ++o) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < last; ++d) oa += idx[d] * p.sa[d], ob += idx[d] * p.sb[d];
    BinaryRow<kStream>(n, a + oa, p.sa[last], b + ob, p.sb[last], out + o * n, f);
    for (int d = last - 1; d >= 0 && ++idx[d] == p.size[d]; --d) idx[d] = 0;
  }
}

// With stream, vector stores of the output are non-temporal (stream.h).
template <typename T>
void Binary(BinaryOp op, const BroadcastPlan& p, const T* a, const T* b, T* out, bool stream) {
  WithFlag(stream, [&](auto ks) {
    constexpr bool kS = decltype(ks)::value;
    switch (op) {
      case BinaryOp::Add: return BinaryPlanLoop<kS>(p, a, b, out, [](auto, auto x, auto y) { return hn::Add(x, y); });
      case BinaryOp::Sub: return BinaryPlanLoop<kS>(p, a, b, out, [](auto, auto x, auto y) { return hn::Sub(x, y); });
      case BinaryOp::Mul: return BinaryPlanLoop<kS>(p, a, b, out, [](auto, auto x, auto y) { return hn::Mul(x, y); });
      case BinaryOp::Div: return BinaryPlanLoop<kS>(p, a, b, out, [](auto, auto x, auto y) { return hn::Div(x, y); });
      case BinaryOp::Eq:
        return BinaryPlanLoop<kS>(
            p, a, b, out, [](auto d, auto x, auto y) { return hn::IfThenElseZero(hn::Eq(x, y), hn::Set(d, 1)); });
    }
  });
}

template <typename T>
void Unary(UnaryOp op, int64_t n, const T* x, T* y, double p, bool stream) {
  WithFlag(stream, [&](auto ks) {
    constexpr bool kS = decltype(ks)::value;
    switch (op) {
      case UnaryOp::Neg: return Map1<kS>(n, x, y, [](auto, auto v) { return hn::Neg(v); });
      case UnaryOp::Exp: return Map1<kS>(n, x, y, [](auto d, auto v) { return SafeExp(d, v); });
      case UnaryOp::Log: return Map1<kS>(n, x, y, [](auto d, auto v) { return SafeLog(d, v); });
      case UnaryOp::Sqrt: return Map1<kS>(n, x, y, [](auto, auto v) { return hn::Sqrt(v); });
      case UnaryOp::Relu:  // x < 0 ? 0 : x, so NaN passes through as in PyTorch
        return Map1<kS>(n, x, y, [](auto d, auto v) { return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Zero(d), v); });
      case UnaryOp::Tanh: return Map1<kS>(n, x, y, [](auto d, auto v) { return SafeTanh(d, v); });
      case UnaryOp::Sigmoid: return Map1<kS>(n, x, y, [](auto d, auto v) { return Sigmoid(d, v); });
      case UnaryOp::Gelu: return Map1<kS>(n, x, y, [](auto d, auto v) { return Gelu(d, v); });
      case UnaryOp::Pow: return Map1<kS>(n, x, y, [p](auto d, auto v) { return PowScalar(d, v, p); });
      case UnaryOp::Scale:
        return Map1<kS>(n, x, y, [p](auto d, auto v) { return hn::Mul(v, hn::Set(d, static_cast<T>(p))); });
    }
  });
}

template <typename T>
void UnaryGrad(UnaryGradOp op, int64_t n, const T* v, const T* g, T* dx, double p, bool stream) {
  WithFlag(stream, [&](auto ks) {
    constexpr bool kS = decltype(ks)::value;
    switch (op) {
      case UnaryGradOp::Relu:  // PyTorch: the gradient at exactly 0 is 0
        return Map2<kS>(n, v, g, dx, [](auto d, auto x, auto gv) { return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), gv); });
      case UnaryGradOp::Gelu: return Map2<kS>(n, v, g, dx, [](auto d, auto x, auto gv) { return GeluGrad(d, x, gv); });
      case UnaryGradOp::Tanh:  // g (1 - y^2)
        return Map2<kS>(n, v, g, dx, [](auto d, auto y, auto gv) { return hn::Mul(gv, hn::NegMulAdd(y, y, hn::Set(d, 1))); });
      case UnaryGradOp::Sigmoid:  // g y (1 - y)
        return Map2<kS>(n, v, g, dx,
                        [](auto d, auto y, auto gv) { return hn::Mul(hn::Mul(gv, y), hn::Sub(hn::Set(d, 1), y)); });
      case UnaryGradOp::Pow:  // g p x^(p-1)
        return Map2<kS>(n, v, g, dx, [p](auto d, auto x, auto gv) {
          return hn::Mul(hn::Mul(gv, hn::Set(d, static_cast<T>(p))), PowScalar(d, x, p - 1));
        });
    }
  });
}

// GELU and its derivative (elementwise.h): full vectors, then one lane at a time (the same lane
// arithmetic).
template <typename T>
void GeluForward(int64_t n, const T* HWY_RESTRICT x, T* HWY_RESTRICT y, T* HWY_RESTRICT dydx) {
  ForRow<T>(n, [&](auto d, int64_t i) HWY_ATTR {
    const auto v = hn::LoadU(d, x + i);
    const auto sv = GeluSigmoid(d, v);
    hn::StoreU(hn::Mul(v, sv), d, y + i);
    hn::StoreU(GeluDerivative(d, v, sv), d, dydx + i);
  });
}

template <typename T>
void Axpy(int64_t n, double alpha, const T* x, T* y) {  // y is read anyway: never streamed
  Map2<false>(n, x, y, y, [alpha](auto d, auto vx, auto vy) { return hn::MulAdd(hn::Set(d, static_cast<T>(alpha)), vx, vy); });
}

template <typename T>
void Fill(int64_t n, T value, T* HWY_RESTRICT out) {
  ForRow<T>(n, [value, out](auto d, int64_t i) HWY_ATTR { hn::StoreU(hn::Set(d, value), d, out + i); });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
