// im2col and col2im: the gather that turns a 2-D convolution of one image into a matrix product,
// and the scatter-add that is its adjoint (the convolution's input gradient). Plain loops over
// contiguous rows: the work is data movement, which the compiler vectorizes where the stride is 1.
#pragma once
#include <cstdint>

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

}  // namespace normlab::autograd::kernels
