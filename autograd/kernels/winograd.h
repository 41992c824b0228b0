// Winograd F(2x2, 3x3): a 3x3, stride-1 convolution with 2.25x fewer multiplications than the
// direct sum. Each 2x2 block of outputs ("tile") is computed from the 4x4 block of input under it:
//   y_tile (2, 2) = A^T [ sum_c U[o, c] (.) V[c] ] A,   U = G w[o, c] G^T,  V = B^T d[c] B
// with (.) the elementwise product over the 16 transform positions xi = 4 i + j and
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// The sum over c, for all tiles at once, is 16 matrix products (one per xi) on the packed GEMM:
//   M[xi] (O, T) = U[xi] (O, C) V[xi] (C, T).
// The weight gradient is the adjoint of the same forward (exact, not an approximation of it):
//   dU[xi] (O, C) = sum over tiles of D[xi] (O, T) V[xi]^T,  D = A dy_tile A^T,  dw = G^T dU G,
// and the input gradient is the same kind of convolution, of dy with the filter turned by 180
// degrees and its channel axes swapped, under padding 2 - pad.
// Results equal the direct convolution's up to float rounding (the transforms add and subtract
// up to 9 terms), and do not depend on how the images are split into calls.
#pragma once
#include <cstdint>

#include "autograd/kernels/im2col.h"

namespace normlab::autograd::kernels::winograd {

// Fewer input or output channels per group than this: the 16 matrix products are too thin to
// repay the transforms (a first layer on 1-channel images), and im2col is used.
constexpr int64_t kMinChannels = 8;

// Whether the convolution of one group with geometry g (g.channels inputs) and `outputs` output
// channels runs through Winograd: a 3x3 kernel, stride 1, dilation 1, padding at most 2 on each
// side (so that the input gradient is such a convolution too), and at least kMinChannels channels.
bool applicable(const ConvGeometry& g, int64_t outputs);

// One group's convolution: g (its input channels, sizes, padding, output size), `outputs`
// output channels; tiles ceil(oh / 2) x ceil(ow / 2) per image.
struct Plan {
  ConvGeometry g;
  int64_t outputs = 0;
  int64_t tiles_h() const { return (g.oh + 1) / 2; }
  int64_t tiles_w() const { return (g.ow + 1) / 2; }
  int64_t tiles() const { return tiles_h() * tiles_w(); }
};

// The plan of the input gradient's convolution for the forward plan p: dy (p.outputs, oh, ow) in,
// p.g.channels channels out at the input's size, padding 2 - pad.
Plan input_grad_plan(const Plan& p);

// Elements of the scratch buffer that conv and weight_grad need (per call, not shared).
int64_t workspace(const Plan& p);

// Tiles are processed in blocks of whole rows of tiles: tile row r of a call's images is row
// r % tiles_h() of image r / tiles_h(), and tile (r, tx) is column k = (r - r0) * tiles_w() + tx of
// a block starting at row r0, nb = (r1 - r0) * tiles_w() columns. A block buffer (16, rows, nb)
// holds element (xi, row, k) at xi * xs + row * nb + k, with xs >= rows * nb + kSlack.
// The transforms may write up to kSlack elements past a row of tiles, into what a later row, a
// later `rows` index or the slack holds: call them for a whole block, in one go.
constexpr int64_t kSlack = 16;

// v (16, C, nb) for tile rows r0 .. r1-1: v[xi, c, k] = (B^T d B)[xi], d the tile's 4x4 input
// patch of channel c (0 in the padding); x_k = x + k * x_stride as in conv. scratch:
// (2 (r1 - r0) + 2) * (2 tiles_w() + 2 kSlack + 2) elements.
void input_transform_block(const Plan& p, const float* x, int64_t x_stride, int64_t r0, int64_t r1, float* v,
                           int64_t xs, float* scratch);
void input_transform_block(const Plan& p, const double* x, int64_t x_stride, int64_t r0, int64_t r1, double* v,
                           int64_t xs, double* scratch);
// y's tiles of rows r0 .. r1-1 from the products m (16, outputs, nb): A^T m A (+ bias[o] if not
// null), the tile's second row and column dropped where they fall outside the output.
void output_transform_block(const Plan& p, const float* m, int64_t xs, const float* bias, float* y,
                            int64_t y_stride, int64_t r0, int64_t r1);
void output_transform_block(const Plan& p, const double* m, int64_t xs, const double* bias, double* y,
                            int64_t y_stride, int64_t r0, int64_t r1);
// dd (16, outputs, nb): dd[xi, o, k] = (A e A^T)[xi], e the tile's 2x2 block of dy (outputs, oh,
// ow) (0 outside the output). scratch: 2 * (2 * tiles_w() + 2 * kSlack) elements.
void grad_transform_block(const Plan& p, const float* dy, int64_t dy_stride, int64_t r0, int64_t r1, float* dd,
                          int64_t xs, float* scratch);
void grad_transform_block(const Plan& p, const double* dy, int64_t dy_stride, int64_t r0, int64_t r1, double* dd,
                          int64_t xs, double* scratch);

// Scalar references of the three block transforms (same arithmetic in the same order; they write
// nothing past a row of tiles).
namespace ref {
template <typename T>
void input_transform_block(const Plan& p, const T* x, int64_t x_stride, int64_t r0, int64_t r1, T* v, int64_t xs);
template <typename T>
void output_transform_block(const Plan& p, const T* m, int64_t xs, const T* bias, T* y, int64_t y_stride, int64_t r0,
                            int64_t r1);
template <typename T>
void grad_transform_block(const Plan& p, const T* dy, int64_t dy_stride, int64_t r0, int64_t r1, T* dd, int64_t xs);
}  // namespace ref

// u (16, O, C) from w (O, C, 3, 3): u[xi, o, c] = (G w[o, c] G^T)[xi].
void transform_filter(int64_t o, int64_t c, const float* w, float* u);
void transform_filter(int64_t o, int64_t c, const double* w, double* u);
// u (16, C, O) of the input gradient's filter w'[c, o, i, j] = w[o, c, 2 - i, 2 - j], w (O, C, 3, 3).
void transform_filter_flipped(int64_t o, int64_t c, const float* w, float* u);
void transform_filter_flipped(int64_t o, int64_t c, const double* w, double* u);
// dw (O, C, 3, 3) = G^T du[o, c] G for du (16, O, C): the weight gradient from the transform domain.
void filter_grad(int64_t o, int64_t c, const float* du, float* dw);
void filter_grad(int64_t o, int64_t c, const double* du, double* dw);

// For images k < count: y_k (outputs, oh, ow) = conv(x_k (channels, h, w)) (+ bias (outputs) if
// not null), x_k = x + k * x_stride, y_k = y + k * y_stride; u from transform_filter.
// work: workspace(p) elements.
void conv(const Plan& p, const float* u, const float* bias, const float* x, int64_t x_stride, float* y,
          int64_t y_stride, int64_t count, float* work);
void conv(const Plan& p, const double* u, const double* bias, const double* x, int64_t x_stride, double* y,
          int64_t y_stride, int64_t count, double* work);

// du (16, outputs, channels) = (accumulate ? du : 0) + the sum over images k < count and their
// tiles, in that order, of D[xi] V[xi]^T, with x_k and dy_k (outputs, oh, ow) strided as in conv.
void weight_grad(const Plan& p, const float* x, int64_t x_stride, const float* dy, int64_t dy_stride, int64_t count,
                 float* du, bool accumulate, float* work);
void weight_grad(const Plan& p, const double* x, int64_t x_stride, const double* dy, int64_t dy_stride,
                 int64_t count, double* du, bool accumulate, double* work);

}  // namespace normlab::autograd::kernels::winograd
