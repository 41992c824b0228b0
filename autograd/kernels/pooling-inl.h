// Pooling kernels, per-target Highway bodies (included once per target by pooling.cc). 2x2
// windows: each output row takes a block of N outputs at a time: 2N inputs from each of the two
// input rows, split into even and odd columns (ConcatEven/ConcatOdd), then the max scan of
// pooling.h as selects (which value wins is unpredictable on real data: branches would mispredict
// half the time) or the average's sum; backward, the N gradients go to the 2N positions of each of
// the two rows with StoreInterleaved2 (max: masked by the stored argmax), so dx is written once,
// without a zero fill and a scatter. The last block of a row overlaps the previous one rather than
// leaving a scalar tail (it writes the same values again); a row shorter than one vector uses
// 4-lane vectors, and below 4 outputs the scalar reference. The global average sums a plane in one
// vector of lanes, then across the lanes, then the tail.

#if defined(NORMLAB_AUTOGRAD_KERNELS_POOLING_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_POOLING_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_POOLING_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_POOLING_INL_H_
#endif

#include "autograd/kernels/loop-inl.h"
#include "autograd/kernels/pooling.h"
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

#if HWY_TARGET != HWY_SCALAR
// Average: outputs ox .. ox+N-1 of one output row (as MaxPoolBlock).
template <class D>
HWY_INLINE void AvgPoolBlock(D d, const float* HWY_RESTRICT r0, const float* HWY_RESTRICT r1, int64_t ox,
                             float* HWY_RESTRICT out) {
  const size_t N = hn::Lanes(d);
  const float* p0 = r0 + 2 * ox;
  const float* p1 = r1 + 2 * ox;
  const auto a0 = hn::LoadU(d, p0), a1 = hn::LoadU(d, p0 + N);
  const auto b0 = hn::LoadU(d, p1), b1 = hn::LoadU(d, p1 + N);
  auto sum = hn::Add(hn::Zero(d), hn::ConcatEven(d, a1, a0));
  sum = hn::Add(sum, hn::ConcatOdd(d, a1, a0));
  sum = hn::Add(sum, hn::ConcatEven(d, b1, b0));
  sum = hn::Add(sum, hn::ConcatOdd(d, b1, b0));
  hn::StoreU(hn::Div(sum, hn::Set(d, 4.0f)), d, out + ox);
}

// Max backward: the gradients of outputs ox .. ox+N-1 to input rows g0, g1 (positions base, base + w
// in the plane).
template <class D>
HWY_INLINE void MaxUnpoolBlock(D d, const float* HWY_RESTRICT dy, const int32_t* HWY_RESTRICT ix, int32_t base,
                               int32_t w, int64_t ox, float* HWY_RESTRICT g0, float* HWY_RESTRICT g1) {
  const hn::RebindToSigned<D> di;
  const auto grad = hn::Add(hn::Zero(d), hn::LoadU(d, dy + ox));  // 0 + dy, as the reference's sum
  const auto at = hn::LoadU(di, ix + ox);
  const auto first = hn::Add(hn::Set(di, base + static_cast<int32_t>(2 * ox)), hn::ShiftLeft<1>(hn::Iota(di, 0)));
  const auto pick = [&](decltype(first) pos) HWY_ATTR {
    return hn::IfThenElseZero(hn::RebindMask(d, hn::Eq(at, pos)), grad);
  };
  hn::StoreInterleaved2(pick(first), pick(hn::Add(first, hn::Set(di, 1))), d, g0 + 2 * ox);
  hn::StoreInterleaved2(pick(hn::Add(first, hn::Set(di, w))), pick(hn::Add(first, hn::Set(di, w + 1))), d, g1 + 2 * ox);
}

// Average backward: 0 + dy / 4 to the four positions of each window.
template <class D>
HWY_INLINE void AvgUnpoolBlock(D d, const float* HWY_RESTRICT dy, int64_t ox, float* HWY_RESTRICT g0,
                               float* HWY_RESTRICT g1) {
  const auto share = hn::Add(hn::Zero(d), hn::Div(hn::LoadU(d, dy + ox), hn::Set(d, 4.0f)));
  hn::StoreInterleaved2(share, share, d, g0 + 2 * ox);
  hn::StoreInterleaved2(share, share, d, g1 + 2 * ox);
}

// Calls block(d, ox) over one row of ow >= Lanes(d) outputs, the last block overlapping.
template <class D, class Block>
HWY_INLINE void ForBlocks(D d, int64_t ow, const Block& block) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t ox = 0;
  for (; ox + N <= ow; ox += N) block(d, ox);
  if (ox < ow) block(d, ow - N);
}

// Calls row(d, i) for each output row i with the widest vector that fits in a row (full or 4
// lanes); false when rows are shorter than 4 outputs (the caller runs the reference).
template <class Row>
HWY_INLINE bool ForRows(int64_t oh, int64_t ow, const Row& row) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 4> d4;
  if (ow < static_cast<int64_t>(hn::Lanes(d4))) return false;
  for (int64_t i = 0; i < oh; ++i) {
    if (ow >= static_cast<int64_t>(hn::Lanes(d))) row(d, i);
    else row(d4, i);
  }
  return true;
}

// dx's last column (w odd, rows 0 .. 2 oh - 1) and last row (h odd): +0, as the reference's fill.
inline void ZeroUnpooledEdges(int64_t h, int64_t w, float* g) {
  if (w % 2 == 1)
    for (int64_t r = 0; r < h / 2 * 2; ++r) g[r * w + w - 1] = 0.0f;
  if (h % 2 == 1) std::fill(g + (h - 1) * w, g + h * w, 0.0f);
}
#endif

#if HWY_TARGET != HWY_SCALAR
// The loops of the 2x2 backward kernels: block(tag, q, i, ox, g0, g1) writes the gradients of
// outputs ox.. of row i of plane q to rows 2i (g0) and 2i + 1 (g1) of dx; then the edges a 2x2
// window never covers are zeroed. False (nothing written) when rows are shorter than 4 outputs.
template <class Block>
HWY_INLINE bool Unpool2x2(int64_t planes, int64_t h, int64_t w, float* dx, const Block& block) {
  const int64_t oh = h / 2, ow = w / 2;
  if (ow < static_cast<int64_t>(hn::Lanes(hn::CappedTag<float, 4>()))) return false;
  for (int64_t q = 0; q < planes; ++q) {
    float* g = dx + q * h * w;
    ForRows(oh, ow, [&](auto tag, int64_t i) HWY_ATTR {
      float* g0 = g + 2 * i * w;
      ForBlocks(tag, ow, [&](auto t, int64_t ox) HWY_ATTR { block(t, q, i, ox, g0, g0 + w); });
    });
    ZeroUnpooledEdges(h, w, g);
  }
  return true;
}
#endif

inline void MaxPool2x2Backward(int64_t planes, int64_t h, int64_t w, const float* dy, const int32_t* idx, float* dx) {
#if HWY_TARGET != HWY_SCALAR
  const int64_t oh = h / 2, ow = w / 2;
  if (Unpool2x2(planes, h, w, dx, [&](auto t, int64_t q, int64_t i, int64_t ox, float* g0, float* g1) HWY_ATTR {
        const int64_t row = (q * oh + i) * ow;
        MaxUnpoolBlock(t, dy + row, idx + row, static_cast<int32_t>(2 * i * w), static_cast<int32_t>(w), ox, g0, g1);
      }))
    return;
#endif
  ref::max_pool_2x2_backward(planes, h, w, dy, idx, dx);
}

inline void AvgPool2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y) {
#if HWY_TARGET == HWY_SCALAR
  ref::avg_pool_2x2(planes, h, w, x, y);
#else
  const int64_t oh = h / 2, ow = w / 2;
  for (int64_t q = 0; q < planes; ++q) {
    const float* in = x + q * h * w;
    float* out = y + q * oh * ow;
    const bool done = ForRows(oh, ow, [&](auto tag, int64_t i) HWY_ATTR {
      const float* r0 = in + 2 * i * w;
      ForBlocks(tag, ow, [&](auto t, int64_t ox) HWY_ATTR { AvgPoolBlock(t, r0, r0 + w, ox, out + i * ow); });
    });
    if (!done) return ref::avg_pool_2x2(planes - q, h, w, in, out);
  }
#endif
}

inline void AvgPool2x2Backward(int64_t planes, int64_t h, int64_t w, const float* dy, float* dx) {
#if HWY_TARGET != HWY_SCALAR
  const int64_t oh = h / 2, ow = w / 2;
  if (Unpool2x2(planes, h, w, dx, [&](auto t, int64_t q, int64_t i, int64_t ox, float* g0, float* g1) HWY_ATTR {
        AvgUnpoolBlock(t, dy + (q * oh + i) * ow, ox, g0, g1);
      }))
    return;
#endif
  ref::avg_pool_2x2_backward(planes, h, w, dy, dx);
}

inline void GlobalAvgPool(int64_t planes, int64_t n, const float* x, float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t q = 0; q < planes; ++q) {
    const float* p = x + q * n;
    auto acc = hn::Zero(d);
    int64_t i = 0;
    for (; i + N <= n; i += N) acc = hn::Add(acc, hn::LoadU(d, p + i));
    float sum = LaneSum(d, acc);
    for (; i < n; ++i) sum += p[i];
    y[q] = sum / static_cast<float>(n);
  }
}

inline void GlobalAvgPoolBackward(int64_t planes, int64_t n, const float* dy, float* dx) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t q = 0; q < planes; ++q) {
    const float share = 0.0f + dy[q] / static_cast<float>(n);
    float* g = dx + q * n;
    const auto v = hn::Set(d, share);
    int64_t i = 0;
    for (; i + N <= n; i += N) hn::StoreU(v, d, g + i);
    for (; i < n; ++i) g[i] = share;
  }
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
