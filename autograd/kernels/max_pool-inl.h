// Max-pooling kernel, per-target Highway body (included once per target by max_pool.cc). Each
// output row takes a block of N outputs at a time: 2N inputs from each of the two input rows,
// split into even and odd columns (ConcatEven/ConcatOdd), then the scan of max_pool.h as selects
// (which value wins is unpredictable on real data: branches would mispredict half the time). The
// last block of a row overlaps the previous one rather than leaving a scalar tail; a row shorter
// than one vector uses 4-lane vectors, and below 4 outputs the scalar reference.

#if defined(NORMLAB_AUTOGRAD_KERNELS_MAX_POOL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_MAX_POOL_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_MAX_POOL_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_MAX_POOL_INL_H_
#endif

#include "autograd/kernels/max_pool.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR  // (one lane: no even/odd split; the reference is the kernel)
// Outputs ox .. ox+N-1 of one output row: r0, r1 are the two input rows, base the position of r0's
// first element in the plane, w the row length.
template <class D>
HWY_INLINE void MaxPoolBlock(D d, const float* HWY_RESTRICT r0, const float* HWY_RESTRICT r1, int32_t base, int32_t w,
                             int64_t ox, float* HWY_RESTRICT out, int32_t* HWY_RESTRICT ix) {
  const size_t N = hn::Lanes(d);
  const hn::RebindToSigned<D> di;
  const float* p0 = r0 + 2 * ox;
  const float* p1 = r1 + 2 * ox;
  const auto a0 = hn::LoadU(d, p0), a1 = hn::LoadU(d, p0 + N);
  const auto b0 = hn::LoadU(d, p1), b1 = hn::LoadU(d, p1 + N);
  auto best = hn::ConcatEven(d, a1, a0);  // x[2i, 2j]
  const auto first = hn::Add(hn::Set(di, base + static_cast<int32_t>(2 * ox)), hn::ShiftLeft<1>(hn::Iota(di, 0)));
  auto at = first;
  const auto take = [&](decltype(best) v, decltype(at) i) HWY_ATTR {
    // v is NaN: Not(Eq(v, v)). (Ne(v, v) is false for NaN on AVX2: an ordered comparison.)
    const auto wins = hn::Or(hn::Gt(v, best), hn::Not(hn::Eq(v, v)));
    best = hn::IfThenElse(wins, v, best);
    at = hn::IfThenElse(hn::RebindMask(di, wins), i, at);
  };
  take(hn::ConcatOdd(d, a1, a0), hn::Add(first, hn::Set(di, 1)));   // x[2i, 2j+1]
  take(hn::ConcatEven(d, b1, b0), hn::Add(first, hn::Set(di, w)));  // x[2i+1, 2j]
  take(hn::ConcatOdd(d, b1, b0), hn::Add(first, hn::Set(di, w + 1)));
  hn::StoreU(best, d, out + ox);
  hn::StoreU(at, di, ix + ox);
}

// One output row of ow >= Lanes(d) outputs.
template <class D>
HWY_INLINE void MaxPoolRow(D d, const float* r0, const float* r1, int32_t base, int32_t w, int64_t ow, float* out,
                           int32_t* ix) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t ox = 0;
  for (; ox + N <= ow; ox += N) MaxPoolBlock(d, r0, r1, base, w, ox, out, ix);
  if (ox < ow) MaxPoolBlock(d, r0, r1, base, w, ow - N, out, ix);  // overlaps: the same values again
}
#endif

inline void MaxPool2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y, int32_t* idx) {
#if HWY_TARGET == HWY_SCALAR
  ref::max_pool_2x2(planes, h, w, x, y, idx);
#else
  const int64_t oh = h / 2, ow = w / 2;
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 4> d4;
  if (ow < static_cast<int64_t>(hn::Lanes(d4))) return ref::max_pool_2x2(planes, h, w, x, y, idx);
  const bool full = ow >= static_cast<int64_t>(hn::Lanes(d));
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t i = 0; i < oh; ++i) {
      const float* r0 = x + q * h * w + 2 * i * w;
      const int32_t base = static_cast<int32_t>(2 * i * w);
      float* out = y + (q * oh + i) * ow;
      int32_t* ix = idx + (q * oh + i) * ow;
      if (full) MaxPoolRow(d, r0, r0 + w, base, static_cast<int32_t>(w), ow, out, ix);
      else MaxPoolRow(d4, r0, r0 + w, base, static_cast<int32_t>(w), ow, out, ix);
    }
#endif
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
