// im2col and col2im (see im2col.h): for each row (c, i, j) of the column matrix and each output row
// y, the input row it reads is fixed, and the output columns x whose input column falls inside the
// image form one range [x0, x1): zeros (or nothing, in col2im) outside it, a copy (or add) inside,
// contiguous when stride_w is 1.
#include "autograd/kernels/im2col.h"

#include <algorithm>
#include <cstring>

namespace normlab::autograd::kernels {

namespace {

// The output columns x in [0, ow) whose input column x * stride - pad + offset lies in [0, w).
struct XRange {
  int64_t x0, x1;
};
XRange valid_x(int64_t ow, int64_t w, int64_t stride, int64_t start) {
  // ix = x * stride + start; need 0 <= ix < w.
  int64_t x0 = start >= 0 ? 0 : (-start + stride - 1) / stride;
  int64_t x1 = w - start <= 0 ? 0 : (w - start + stride - 1) / stride;  // first x with ix >= w
  x0 = std::min(x0, ow);
  x1 = std::clamp(x1, x0, ow);
  return {x0, x1};
}

template <typename T>
void im2col_impl(const ConvGeometry& g, const T* img, T* col) {
  const int64_t plane = g.h * g.w;
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t start_x = j * g.dil_w - g.pad_w;
        const XRange r = valid_x(g.ow, g.w, g.stride_w, start_x);
        for (int64_t y = 0; y < g.oh; ++y, col += g.ow) {
          const int64_t iy = y * g.stride_h - g.pad_h + i * g.dil_h;
          if (iy < 0 || iy >= g.h || r.x0 == r.x1) {
            std::fill(col, col + g.ow, T(0));
            continue;
          }
          const T* src = img + c * plane + iy * g.w;  // col[x] = src[x * stride_w + start_x]
          std::fill(col, col + r.x0, T(0));
          if (g.stride_w == 1) {
            std::memcpy(col + r.x0, src + r.x0 + start_x, static_cast<size_t>(r.x1 - r.x0) * sizeof(T));
          } else {
            for (int64_t x = r.x0; x < r.x1; ++x) col[x] = src[x * g.stride_w + start_x];
          }
          std::fill(col + r.x1, col + g.ow, T(0));
        }
      }
}

template <typename T>
void col2im_impl(const ConvGeometry& g, const T* col, T* img) {
  const int64_t plane = g.h * g.w;
  std::fill(img, img + g.channels * plane, T(0));
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t start_x = j * g.dil_w - g.pad_w;
        const XRange r = valid_x(g.ow, g.w, g.stride_w, start_x);
        for (int64_t y = 0; y < g.oh; ++y, col += g.ow) {
          const int64_t iy = y * g.stride_h - g.pad_h + i * g.dil_h;
          if (iy < 0 || iy >= g.h) continue;
          T* dst = img + c * plane + iy * g.w;  // dst[x * stride_w + start_x] += col[x]
          if (g.stride_w == 1) {
            for (int64_t x = r.x0; x < r.x1; ++x) dst[x + start_x] += col[x];
          } else {
            for (int64_t x = r.x0; x < r.x1; ++x) dst[x * g.stride_w + start_x] += col[x];
          }
        }
      }
}

}  // namespace

void im2col(const ConvGeometry& g, const float* img, float* col) { im2col_impl(g, img, col); }
void im2col(const ConvGeometry& g, const double* img, double* col) { im2col_impl(g, img, col); }
void col2im(const ConvGeometry& g, const float* col, float* img) { col2im_impl(g, col, img); }
void col2im(const ConvGeometry& g, const double* col, double* img) { col2im_impl(g, col, img); }

}  // namespace normlab::autograd::kernels
