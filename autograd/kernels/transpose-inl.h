// Register transposes of small square blocks, per-target Highway bodies shared by the GEMM's packing
// (gemm-inl.h) and the attention kernels' transposed copies of K and V (attention-inl.h): L x L
// blocks of 128- or 256-bit vectors (4x4 or 8x8 floats, 2x2 or 4x4 doubles) from interleaves and
// half swaps. Not on HWY_SCALAR (one lane: nothing to interleave); callers move values one at a time there.

#if defined(NORMLAB_AUTOGRAD_KERNELS_TRANSPOSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_TRANSPOSE_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_TRANSPOSE_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_TRANSPOSE_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR  // no interleaves with one lane
// The vectors the packing transposes with: D itself up to 256 bits, its 256-bit half on wider
// targets (AVX-512: 8x8 float or 4x4 double blocks; TransposeSquare has no 16x16 or 8x8-double
// form, and 256-bit blocks keep the loads within the panel's rows).
template <class D>
using TransposeD = hn::CappedTag<hn::TFromD<D>, 32 / sizeof(hn::TFromD<D>)>;

// Whether TransposeSquare handles this vector type: exactly the L x L blocks below (float and
// double in 128 and 256 bits), built from 128-bit-block interleaves and half swaps.
constexpr bool TransposeShapeHandled(size_t L, size_t kBlock) {
  return (L == 2 && kBlock == 2) || (L == 4 && kBlock == 4) || (L == 4 && kBlock == 2) || (L == 8 && kBlock == 4);
}
template <class D>
constexpr bool kCanTranspose =
    !HWY_HAVE_SCALABLE && TransposeShapeHandled(hn::MaxLanes(D()), 16 / sizeof(hn::TFromD<D>));

// Interleaves the 64-bit halves of each 128-bit block: [a.lo b.lo] (Lo64) or [a.hi b.hi] (Hi64).
template <class D, class V>
HWY_INLINE V Lo64(D d, V a, V b) {
  const hn::Repartition<uint64_t, D> d64;
  return hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, a), hn::BitCast(d64, b)));
}
template <class D, class V>
HWY_INLINE V Hi64(D d, V a, V b) {
  const hn::Repartition<uint64_t, D> d64;
  return hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, a), hn::BitCast(d64, b)));
}

// Transposes the L x L block held in r[0 .. L) (row i = r[i]): afterwards r[q] = column q.
template <class D, class V>
HWY_INLINE void TransposeSquare(D d, V* HWY_RESTRICT r) {
  constexpr size_t L = hn::MaxLanes(D());
  constexpr size_t kBlock = 16 / sizeof(hn::TFromD<D>);  // lanes per 128-bit block
  if constexpr (L == 2) {  // double, 128 bits
    const V t0 = hn::InterleaveLower(d, r[0], r[1]), t1 = hn::InterleaveUpper(d, r[0], r[1]);
    r[0] = t0, r[1] = t1;
  } else if constexpr (L == 4 && kBlock == 4) {  // float, 128 bits
    const V t0 = hn::InterleaveLower(d, r[0], r[1]), t1 = hn::InterleaveUpper(d, r[0], r[1]);
    const V t2 = hn::InterleaveLower(d, r[2], r[3]), t3 = hn::InterleaveUpper(d, r[2], r[3]);
    r[0] = Lo64(d, t0, t2), r[1] = Hi64(d, t0, t2), r[2] = Lo64(d, t1, t3), r[3] = Hi64(d, t1, t3);
  } else if constexpr (L == 4 && kBlock == 2) {  // double, 256 bits
    const V t0 = hn::InterleaveLower(d, r[0], r[1]), t1 = hn::InterleaveUpper(d, r[0], r[1]);
    const V t2 = hn::InterleaveLower(d, r[2], r[3]), t3 = hn::InterleaveUpper(d, r[2], r[3]);
    r[0] = hn::ConcatLowerLower(d, t2, t0), r[1] = hn::ConcatLowerLower(d, t3, t1);
    r[2] = hn::ConcatUpperUpper(d, t2, t0), r[3] = hn::ConcatUpperUpper(d, t3, t1);
  } else if constexpr (L == 8 && kBlock == 4) {  // float, 256 bits
    V u[8];
    for (size_t h = 0; h < 8; h += 4) {  // rows h .. h+3: 4x4 transposes within each 128-bit block
      const V t0 = hn::InterleaveLower(d, r[h], r[h + 1]), t1 = hn::InterleaveUpper(d, r[h], r[h + 1]);
      const V t2 = hn::InterleaveLower(d, r[h + 2], r[h + 3]), t3 = hn::InterleaveUpper(d, r[h + 2], r[h + 3]);
      u[h] = Lo64(d, t0, t2), u[h + 1] = Hi64(d, t0, t2), u[h + 2] = Lo64(d, t1, t3), u[h + 3] = Hi64(d, t1, t3);
    }
    for (size_t q = 0; q < 4; ++q) {  // then swap the 128-bit halves across the two row groups
      r[q] = hn::ConcatLowerLower(d, u[4 + q], u[q]);
      r[q + 4] = hn::ConcatUpperUpper(d, u[4 + q], u[q]);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
