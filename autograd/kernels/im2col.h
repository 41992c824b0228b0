// im2col and col2im: the gather that turns a 2-D convolution of one image into a matrix product,
// and the scatter-add that is its adjoint (the convolution's input gradient). Public header (no
// SIMD types): Highway bodies in im2col-inl.h (col2im's row adds as vectors, every loop compiled
// for each target), dispatch in im2col.cc; the scalar references below define the results, which
// every target matches bit for bit (a copy and additions in the same order).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace normlab::autograd::kernels {

// The geometry of a 2-D convolution (or pooling window) over one image of `channels` planes:
// input (channels, h, w), kernel (kh, kw), output (oh, ow) with
//   oh = floor((h + 2 pad_h - dil_h (kh - 1) - 1) / stride_h) + 1, and likewise ow.
struct ConvGeometry {
  int64_t channels = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t oh = 0, ow = 0;
  // Rows of the column matrix: channels * kh * kw; its columns: oh * ow.
  int64_t rows() const { return channels * kh * kw; }
  int64_t cols() const { return oh * ow; }
};

// col (channels * kh * kw, oh * ow), row (c, i, j) in that order, column (y, x):
//   col[(c, i, j), (y, x)] = img[c, y * stride_h - pad_h + i * dil_h, x * stride_w - pad_w + j * dil_w],
// 0 where that position is in the padding.
void im2col(const ConvGeometry& g, const float* img, float* col);
void im2col(const ConvGeometry& g, const double* img, double* col);

// The adjoint of im2col: img = 0, then img[c, y', x'] += col[(c, i, j), (y, x)] for every entry that
// im2col read from (c, y', x'), in the order (c, i, j, y, x) (a fixed order: the sums of the
// overlapping windows do not depend on anything but the geometry).
void col2im(const ConvGeometry& g, const float* col, float* img);
void col2im(const ConvGeometry& g, const double* col, double* img);

namespace ref {
// The output columns x in [0, ow) whose input column x * stride - pad + offset lies in [0, w).
struct XRange {
  int64_t x0, x1;
};
inline XRange valid_x(int64_t ow, int64_t w, int64_t stride, int64_t start) {
  // ix = x * stride + start; need 0 <= ix < w.
  int64_t x0 = start >= 0 ? 0 : (-start + stride - 1) / stride;
  int64_t x1 = w - start <= 0 ? 0 : (w - start + stride - 1) / stride;  // first x with ix >= w
  x0 = std::min(x0, ow);
  x1 = std::clamp(x1, x0, ow);
  return {x0, x1};
}

// Calls row(col_row, src, r) for each row (c, i, j, y) of the column matrix in that order: col_row
// its ow values, src the input row it reads (null when that row is in the padding) shifted so that
// column x reads src[x * stride_w] (src = image row + start column; only [r.x0, r.x1) is inside).
// (ImgPtr and ColPtr: const for the side that is read.)
template <typename ImgPtr, typename ColPtr, class Row>
void for_col_rows(const ConvGeometry& g, ImgPtr img, ColPtr col, const Row& row) {
  const int64_t plane = g.h * g.w;
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t start_x = j * g.dil_w - g.pad_w;
        const XRange r = valid_x(g.ow, g.w, g.stride_w, start_x);
        for (int64_t y = 0; y < g.oh; ++y, col += g.ow) {
          const int64_t iy = y * g.stride_h - g.pad_h + i * g.dil_h;
          row(col, iy < 0 || iy >= g.h ? ImgPtr(nullptr) : img + c * plane + iy * g.w + start_x, r);
        }
      }
}

template <typename T>
void im2col(const ConvGeometry& g, const T* img, T* col) {
  for_col_rows(g, img, col, [&](T* out, const T* src, XRange r) {
    if (!src) r.x0 = r.x1 = g.ow;
    std::fill(out, out + r.x0, T(0));
    if (g.stride_w == 1) std::memcpy(out + r.x0, src + r.x0, static_cast<size_t>(r.x1 - r.x0) * sizeof(T));
    else
      for (int64_t x = r.x0; x < r.x1; ++x) out[x] = src[x * g.stride_w];
    std::fill(out + r.x1, out + g.ow, T(0));
  });
}

template <typename T>
void col2im(const ConvGeometry& g, const T* col, T* img) {
  std::fill(img, img + g.channels * g.h * g.w, T(0));
  for_col_rows(g, img, col, [&](const T* in, T* dst, XRange r) {
    if (!dst) return;
    for (int64_t x = r.x0; x < r.x1; ++x) dst[x * g.stride_w] += in[x];
  });
}
}  // namespace ref

}  // namespace normlab::autograd::kernels
