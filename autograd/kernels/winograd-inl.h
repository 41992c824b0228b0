// Winograd F(2x2, 3x3) transforms, per-target Highway bodies (included once per target by
// winograd.cc). Lanes run along a row of tiles (tx .. tx+N-1): tile tx reads input columns
// 2 tx - pad .. 2 tx - pad + 3, so the four columns of N tiles are the even and odd elements of
// 2N inputs from column 2 tx - pad and from two further (LoadInterleaved2 twice); outputs are
// written back as even/odd pairs (StoreInterleaved2). Rows go through zero-padded copies (the
// padding and the row's end without bounds checks). The order of the additions is the scalar
// reference's (winograd.h, ref::), so both give the same bits.

#if defined(NORMLAB_AUTOGRAD_KERNELS_WINOGRAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_WINOGRAD_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_WINOGRAD_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_WINOGRAD_INL_H_
#endif

#include <algorithm>

#include "autograd/kernels/loop-inl.h"
#include "autograd/kernels/winograd.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::winograd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[0 .. len) = src[j - shift] where 0 <= j - shift < n (src may be null: all zeros), else 0;
// shift >= 0. Vector copies (rows are short: a call to memcpy per row cost more than the copy).
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void PaddedRow(D d, const T* HWY_RESTRICT src, int64_t n, int64_t shift, int64_t len, T* HWY_RESTRICT dst) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t to = src ? std::min(len, n + shift) : shift;  // dst[shift .. to) comes from src
  for (int64_t j = 0; j < std::min(shift, len); ++j) dst[j] = T(0);
  int64_t j = shift;
  for (; j + N <= to; j += N) hn::StoreU(hn::LoadU(d, src + (j - shift)), d, dst + j);
  for (; j < to; ++j) dst[j] = src[j - shift];
  for (j = std::max(j, shift); j < len; ++j) dst[j] = T(0);
}

// The block's tile rows r0 .. r1-1 (see winograd.h, input_transform_block). The input rows that
// a run of tile rows of one image reads are copied once into zero-padded rows of `len` elements
// (padding and the row's end without bounds checks), 2 per tile row plus 2.
template <class D, typename T = hn::TFromD<D>>
void InputTransformBlock(D d, const Plan& p, const T* x, int64_t x_stride, int64_t r0, int64_t r1, T* v, int64_t xs,
                         T* scratch) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const ConvGeometry& g = p.g;
  const int64_t th = p.tiles_h(), tw = p.tiles_w(), nb = (r1 - r0) * tw, plane = g.h * g.w;
  const int64_t len = 2 * ((tw + N - 1) / N * N) + 2;  // what the loads below read of a padded row
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t r = r0; r < r1;) {
      const int64_t n = r / th, ty0 = r % th, run = std::min(r1 - r, th - ty0);  // tile rows ty0 .. of image n
      const T* img = x + n * x_stride + c * plane;
      const int64_t first = 2 * ty0 - g.pad_h;  // input row of padded row 0
      for (int64_t q = 0; q < 2 * run + 2; ++q) {
        const int64_t iy = first + q;
        PaddedRow(d, iy >= 0 && iy < g.h ? img + iy * g.w : static_cast<const T*>(nullptr), g.w, g.pad_w, len,
                  scratch + q * len);
      }
      for (int64_t t = 0; t < run; ++t) {
        const T* rows = scratch + 2 * t * len;  // the tile row's 4 input rows, len apart
        T* out = v + c * nb + (r + t - r0) * tw;
        for (int64_t tx = 0; tx < tw; tx += N) {
          // u[i][j] = (d B)[i][j] for row i of the patches: d[i][0..3] = columns 2 tx .. 2 tx + 3.
          hn::Vec<D> u[4][4];
          for (int i = 0; i < 4; ++i) {
            hn::Vec<D> e0, o0, e1, o1;  // columns 0, 1, 2, 3 of N patches
            hn::LoadInterleaved2(d, rows + i * len + 2 * tx, e0, o0);
            hn::LoadInterleaved2(d, rows + i * len + 2 * tx + 2, e1, o1);
            u[i][0] = hn::Sub(e0, e1);
            u[i][1] = hn::Add(o0, e1);
            u[i][2] = hn::Sub(e1, o0);
            u[i][3] = hn::Sub(o0, o1);
          }
          for (int j = 0; j < 4; ++j) {  // B^T (d B), column j
            hn::StoreU(hn::Sub(u[0][j], u[2][j]), d, out + (0 + j) * xs + tx);
            hn::StoreU(hn::Add(u[1][j], u[2][j]), d, out + (4 + j) * xs + tx);
            hn::StoreU(hn::Sub(u[2][j], u[1][j]), d, out + (8 + j) * xs + tx);
            hn::StoreU(hn::Sub(u[1][j], u[3][j]), d, out + (12 + j) * xs + tx);
          }
        }
      }
      r += run;
    }
}

// Writes a[0], b[0], a[1], b[1], ... to out[0 .. min(count, 2N)), count > 0. A row's last,
// partial pairs go through masked stores where those touch nothing past the row (loop-inl.h),
// else element by element.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void StorePairs(D d, hn::Vec<D> a, hn::Vec<D> b, int64_t count, T* out) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  if (count >= 2 * N) return hn::StoreInterleaved2(a, b, d, out);
  HWY_ALIGN T tmp[2 * hn::MaxLanes(d)];
  hn::StoreInterleaved2(a, b, d, tmp);
  if constexpr (kernels::HWY_NAMESPACE::kMaskedAccessIsSafe) {
    hn::BlendedStore(hn::Load(d, tmp), hn::FirstN(d, static_cast<size_t>(std::min(count, N))), d, out);
    if (count > N) hn::BlendedStore(hn::Load(d, tmp + N), hn::FirstN(d, static_cast<size_t>(count - N)), d, out + N);
  } else {
    for (int64_t j = 0; j < count; ++j) out[j] = tmp[j];
  }
}

template <class D, typename T = hn::TFromD<D>>
void OutputTransformBlock(D d, const Plan& p, const T* m, int64_t xs, const T* bias, T* y, int64_t y_stride,
                          int64_t r0, int64_t r1) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const ConvGeometry& g = p.g;
  const int64_t th = p.tiles_h(), tw = p.tiles_w(), nb = (r1 - r0) * tw, plane = g.oh * g.ow;
  for (int64_t o = 0; o < p.outputs; ++o) {
    const auto b = hn::Set(d, bias ? bias[o] : T(0));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t oy = 2 * (r % th);
      T* y0 = y + (r / th) * y_stride + o * plane + oy * g.ow;
      T* y1 = oy + 1 < g.oh ? y0 + g.ow : nullptr;
      const T* q = m + o * nb + (r - r0) * tw;
      for (int64_t tx = 0; tx < tw; tx += N) {
        hn::Vec<D> s0[4], s1[4];  // A^T q: rows 0 and 1, column j
        for (int j = 0; j < 4; ++j) {
          const auto q0 = hn::LoadU(d, q + (0 + j) * xs + tx), q1 = hn::LoadU(d, q + (4 + j) * xs + tx);
          const auto q2 = hn::LoadU(d, q + (8 + j) * xs + tx), q3 = hn::LoadU(d, q + (12 + j) * xs + tx);
          s0[j] = hn::Add(hn::Add(q0, q1), q2);
          s1[j] = hn::Sub(hn::Sub(q1, q2), q3);
        }
        const int64_t count = g.ow - 2 * tx;  // outputs left in the row
        StorePairs(d, hn::Add(hn::Add(hn::Add(s0[0], s0[1]), s0[2]), b), hn::Add(hn::Sub(hn::Sub(s0[1], s0[2]), s0[3]), b),
                   count, y0 + 2 * tx);
        if (y1)
          StorePairs(d, hn::Add(hn::Add(hn::Add(s1[0], s1[1]), s1[2]), b),
                     hn::Add(hn::Sub(hn::Sub(s1[1], s1[2]), s1[3]), b), count, y1 + 2 * tx);
      }
    }
  }
}

// dy's rows are read in place where a whole vector's read stays inside the last image's planes
// (the lanes past the row belong to no tile, or to a last tile's missing column, which is zeroed);
// otherwise through zero-padded copies (a copy's scalar stores, read back at once by vector loads,
// stall on store forwarding).
template <class D, typename T = hn::TFromD<D>>
void GradTransformBlock(D d, const Plan& p, const T* dy, int64_t dy_stride, int64_t r0, int64_t r1, T* dd,
                        int64_t xs, T* scratch) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const ConvGeometry& g = p.g;
  const int64_t th = p.tiles_h(), tw = p.tiles_w(), nb = (r1 - r0) * tw, plane = g.oh * g.ow;
  const int64_t len = 2 * ((tw + N - 1) / N * N);  // what the loads below read of a row
  const T* end = dy + ((r1 - 1) / th) * dy_stride + p.outputs * plane;  // past what the block may read
  T* rows[2] = {scratch, scratch + len};
  const hn::Vec<D> zero = hn::Zero(d);
  for (int64_t o = 0; o < p.outputs; ++o)
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t oy = 2 * (r % th);
      const bool two_rows = oy + 1 < g.oh;
      const T* row0 = dy + (r / th) * dy_stride + o * plane + oy * g.ow;
      const T* row1 = row0 + g.ow;
      if ((two_rows ? row1 : row0) + len > end) {
        PaddedRow(d, row0, g.ow, 0, len, rows[0]);
        if (two_rows) PaddedRow(d, row1, g.ow, 0, len, rows[1]);
        row0 = rows[0], row1 = rows[1];
      }
      T* out = dd + o * nb + (r - r0) * tw;
      for (int64_t tx = 0; tx < tw; tx += N) {
        hn::Vec<D> e00, e01, e10 = zero, e11 = zero;
        hn::LoadInterleaved2(d, row0 + 2 * tx, e00, e01);
        if (two_rows) hn::LoadInterleaved2(d, row1 + 2 * tx, e10, e11);
        if (g.ow & 1) {  // a last tile's second column lies outside the output: 0
          const auto whole = hn::FirstN(d, static_cast<size_t>((g.ow - 2 * tx) / 2));
          e01 = hn::IfThenElseZero(whole, e01), e11 = hn::IfThenElseZero(whole, e11);
        }
        // A e: rows (e00, e01), (e00 + e10, e01 + e11), (e00 - e10, e01 - e11), (-e10, -e11); then
        // each row (a, b) times A^T: (a, a + b, a - b, -b).
        const hn::Vec<D> f[4][2] = {{e00, e01},
                                    {hn::Add(e00, e10), hn::Add(e01, e11)},
                                    {hn::Sub(e00, e10), hn::Sub(e01, e11)},
                                    {hn::Neg(e10), hn::Neg(e11)}};
        for (int i = 0; i < 4; ++i) {
          hn::StoreU(f[i][0], d, out + (4 * i + 0) * xs + tx);
          hn::StoreU(hn::Add(f[i][0], f[i][1]), d, out + (4 * i + 1) * xs + tx);
          hn::StoreU(hn::Sub(f[i][0], f[i][1]), d, out + (4 * i + 2) * xs + tx);
          hn::StoreU(hn::Neg(f[i][1]), d, out + (4 * i + 3) * xs + tx);
        }
      }
    }
}

}  // namespace normlab::autograd::kernels::winograd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
