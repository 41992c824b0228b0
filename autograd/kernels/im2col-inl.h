// col2im, per-target Highway body (included once per target by im2col.cc). For each row (c, i, j,
// y) of the column matrix, the input row it adds to is fixed, and the output columns x whose input
// column falls inside the image form one range [x0, x1) (ref::for_col_rows in im2col.h). With
// stride 1 the range is contiguous on both sides and is added as vectors (the same one addition per
// element as the reference, in the same order, so the same bits); other strides scatter element by
// element. (im2col needs no SIMD body: with stride 1 its rows are memcpy.)

#if defined(NORMLAB_AUTOGRAD_KERNELS_IM2COL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_IM2COL_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_IM2COL_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_IM2COL_INL_H_
#endif

#include "autograd/kernels/im2col.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[k] += src[k] for k < n, in vectors of N lanes, then one by one.
HWY_INLINE void AddRow(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t k = 0;
  for (; k + N <= n; k += N) hn::StoreU(hn::Add(hn::LoadU(d, dst + k), hn::LoadU(d, src + k)), d, dst + k);
  for (; k < n; ++k) dst[k] += src[k];
}

inline void Col2Im(const ConvGeometry& g, const float* col, float* img) {
  std::fill(img, img + g.channels * g.h * g.w, 0.0f);
  ref::for_col_rows(g, img, col, [&](const float* in, float* dst, ref::XRange r) HWY_ATTR {
    if (!dst) return;
    if (g.stride_w == 1) AddRow(in + r.x0, dst + r.x0, r.x1 - r.x0);
    else
      for (int64_t x = r.x0; x < r.x1; ++x) dst[x * g.stride_w] += in[x];
  });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
