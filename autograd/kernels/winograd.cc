// Winograd F(2x2, 3x3) convolution (see winograd.h): the block transforms compiled once per
// Highway target (winograd-inl.h) and dispatched at run time, their scalar references, and the
// driver that runs blocks of about kBlock tiles through transform, 16 products on the packed GEMM
// (gemm.h) and back, so that a block's transformed input and products stay in L2.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/winograd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/winograd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::winograd::HWY_NAMESPACE {
// Non-template wrappers (Highway exports functions, not templates). Lanes run along a row of
// tiles: the fewest of 4, 8 or kSlack (16) lanes that cover one (14x14 images: 7 tiles, 8 lanes),
// so that short rows do not spend most of each instruction on empty lanes (on Zen 4 a 256-bit
// operation also issues at twice the rate of a 512-bit one). The lanes are independent, so the
// width changes no result.
template <typename T, class Call>
void ByWidth(const Plan& p, const Call& call) {
  const int64_t tw = p.tiles_w();
  if (tw <= 4) call(hn::CappedTag<T, 4>());
  else if (tw <= 8) call(hn::CappedTag<T, 8>());
  else call(hn::CappedTag<T, kSlack>());
}
#define NORMLAB_WINOGRAD_WRAPPERS(T, S)                                                                         \
  void Input##S(const Plan& p, const T* x, int64_t x_stride, int64_t r0, int64_t r1, T* v, int64_t xs,        \
                T* scratch) {                                                                                  \
    ByWidth<T>(p, [&](auto d) HWY_ATTR { InputTransformBlock(d, p, x, x_stride, r0, r1, v, xs, scratch); });  \
  }                                                                                                            \
  void Output##S(const Plan& p, const T* m, int64_t xs, const T* bias, T* y, int64_t y_stride, int64_t r0,    \
                 int64_t r1) {                                                                                 \
    ByWidth<T>(p, [&](auto d) HWY_ATTR { OutputTransformBlock(d, p, m, xs, bias, y, y_stride, r0, r1); });    \
  }                                                                                                            \
  void Grad##S(const Plan& p, const T* dy, int64_t dy_stride, int64_t r0, int64_t r1, T* dd, int64_t xs,      \
               T* scratch) {                                                                                   \
    ByWidth<T>(p, [&](auto d) HWY_ATTR { GradTransformBlock(d, p, dy, dy_stride, r0, r1, dd, xs, scratch); }); \
  }
NORMLAB_WINOGRAD_WRAPPERS(float, F32)
NORMLAB_WINOGRAD_WRAPPERS(double, F64)
#undef NORMLAB_WINOGRAD_WRAPPERS
}  // namespace normlab::autograd::kernels::winograd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cstring>

#include "autograd/kernels/gemm.h"
#include "autograd/parallel.h"
#include "base/thread_pool.h"

namespace normlab::autograd::kernels::winograd {

HWY_EXPORT(InputF32);
HWY_EXPORT(InputF64);
HWY_EXPORT(OutputF32);
HWY_EXPORT(OutputF64);
HWY_EXPORT(GradF32);
HWY_EXPORT(GradF64);

void input_transform_block(const Plan& p, const float* x, int64_t x_stride, int64_t r0, int64_t r1, float* v,
                           int64_t xs, float* scratch) {
  HWY_DYNAMIC_DISPATCH(InputF32)(p, x, x_stride, r0, r1, v, xs, scratch);
}
void input_transform_block(const Plan& p, const double* x, int64_t x_stride, int64_t r0, int64_t r1, double* v,
                           int64_t xs, double* scratch) {
  HWY_DYNAMIC_DISPATCH(InputF64)(p, x, x_stride, r0, r1, v, xs, scratch);
}
void output_transform_block(const Plan& p, const float* m, int64_t xs, const float* bias, float* y,
                            int64_t y_stride, int64_t r0, int64_t r1) {
  HWY_DYNAMIC_DISPATCH(OutputF32)(p, m, xs, bias, y, y_stride, r0, r1);
}
void output_transform_block(const Plan& p, const double* m, int64_t xs, const double* bias, double* y,
                            int64_t y_stride, int64_t r0, int64_t r1) {
  HWY_DYNAMIC_DISPATCH(OutputF64)(p, m, xs, bias, y, y_stride, r0, r1);
}
void grad_transform_block(const Plan& p, const float* dy, int64_t dy_stride, int64_t r0, int64_t r1, float* dd,
                          int64_t xs, float* scratch) {
  HWY_DYNAMIC_DISPATCH(GradF32)(p, dy, dy_stride, r0, r1, dd, xs, scratch);
}
void grad_transform_block(const Plan& p, const double* dy, int64_t dy_stride, int64_t r0, int64_t r1, double* dd,
                          int64_t xs, double* scratch) {
  HWY_DYNAMIC_DISPATCH(GradF64)(p, dy, dy_stride, r0, r1, dd, xs, scratch);
}

namespace ref {

template <typename T>
void input_transform_block(const Plan& p, const T* x, int64_t x_stride, int64_t r0, int64_t r1, T* v, int64_t xs) {
  const ConvGeometry& g = p.g;
  const int64_t th = p.tiles_h(), tw = p.tiles_w(), nb = (r1 - r0) * tw, plane = g.h * g.w;
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t tx = 0; tx < tw; ++tx) {
        const T* img = x + (r / th) * x_stride + c * plane;
        const int64_t y0 = 2 * (r % th) - g.pad_h, x0 = 2 * tx - g.pad_w;
        T d[4][4];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            const int64_t iy = y0 + i, ix = x0 + j;
            d[i][j] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? img[iy * g.w + ix] : T(0);
          }
        T u[4][4];  // d B, row by row
        for (int i = 0; i < 4; ++i) {
          u[i][0] = d[i][0] - d[i][2];
          u[i][1] = d[i][1] + d[i][2];
          u[i][2] = d[i][2] - d[i][1];
          u[i][3] = d[i][1] - d[i][3];
        }
        T* out = v + c * nb + (r - r0) * tw + tx;
        for (int j = 0; j < 4; ++j) {  // B^T (d B)
          out[(0 + j) * xs] = u[0][j] - u[2][j];
          out[(4 + j) * xs] = u[1][j] + u[2][j];
          out[(8 + j) * xs] = u[2][j] - u[1][j];
          out[(12 + j) * xs] = u[1][j] - u[3][j];
        }
      }
}

template <typename T>
void output_transform_block(const Plan& p, const T* m, int64_t xs, const T* bias, T* y, int64_t y_stride, int64_t r0,
                            int64_t r1) {
  const ConvGeometry& g = p.g;
  const int64_t th = p.tiles_h(), tw = p.tiles_w(), nb = (r1 - r0) * tw, plane = g.oh * g.ow;
  for (int64_t o = 0; o < p.outputs; ++o)
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t tx = 0; tx < tw; ++tx) {
        const T b = bias ? bias[o] : T(0);
        const T* q = m + o * nb + (r - r0) * tw + tx;
        T s0[4], s1[4];  // A^T q
        for (int j = 0; j < 4; ++j) {
          s0[j] = q[(0 + j) * xs] + q[(4 + j) * xs] + q[(8 + j) * xs];
          s1[j] = q[(4 + j) * xs] - q[(8 + j) * xs] - q[(12 + j) * xs];
        }
        const int64_t oy = 2 * (r % th), ox = 2 * tx;
        T* out = y + (r / th) * y_stride + o * plane + oy * g.ow + ox;
        const bool two_cols = ox + 1 < g.ow;
        out[0] = s0[0] + s0[1] + s0[2] + b;
        if (two_cols) out[1] = s0[1] - s0[2] - s0[3] + b;
        if (oy + 1 < g.oh) {
          out[g.ow] = s1[0] + s1[1] + s1[2] + b;
          if (two_cols) out[g.ow + 1] = s1[1] - s1[2] - s1[3] + b;
        }
      }
}

template <typename T>
void grad_transform_block(const Plan& p, const T* dy, int64_t dy_stride, int64_t r0, int64_t r1, T* dd, int64_t xs) {
  const ConvGeometry& g = p.g;
  const int64_t th = p.tiles_h(), tw = p.tiles_w(), nb = (r1 - r0) * tw, plane = g.oh * g.ow;
  for (int64_t o = 0; o < p.outputs; ++o)
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t tx = 0; tx < tw; ++tx) {
        const int64_t oy = 2 * (r % th), ox = 2 * tx;
        const T* src = dy + (r / th) * dy_stride + o * plane + oy * g.ow + ox;
        const bool two_rows = oy + 1 < g.oh, two_cols = ox + 1 < g.ow;
        const T e00 = src[0], e01 = two_cols ? src[1] : T(0);
        const T e10 = two_rows ? src[g.ow] : T(0), e11 = two_rows && two_cols ? src[g.ow + 1] : T(0);
        const T f[4][2] = {{e00, e01}, {e00 + e10, e01 + e11}, {e00 - e10, e01 - e11}, {-e10, -e11}};  // A e
        T* out = dd + o * nb + (r - r0) * tw + tx;
        for (int i = 0; i < 4; ++i) {  // (A e) A^T
          out[(4 * i + 0) * xs] = f[i][0];
          out[(4 * i + 1) * xs] = f[i][0] + f[i][1];
          out[(4 * i + 2) * xs] = f[i][0] - f[i][1];
          out[(4 * i + 3) * xs] = -f[i][1];
        }
      }
}

template void input_transform_block(const Plan&, const float*, int64_t, int64_t, int64_t, float*, int64_t);
template void input_transform_block(const Plan&, const double*, int64_t, int64_t, int64_t, double*, int64_t);
template void output_transform_block(const Plan&, const float*, int64_t, const float*, float*, int64_t, int64_t,
                                     int64_t);
template void output_transform_block(const Plan&, const double*, int64_t, const double*, double*, int64_t, int64_t,
                                     int64_t);
template void grad_transform_block(const Plan&, const float*, int64_t, int64_t, int64_t, float*, int64_t);
template void grad_transform_block(const Plan&, const double*, int64_t, int64_t, int64_t, double*, int64_t);

}  // namespace ref

namespace {

// About this many tiles per block (whole rows of tiles): the GEMMs' column count. The block's
// transformed input (16 x C x nb) and products (16 x O x nb) take 384 KiB at C = 32, O = 64 in float.
constexpr int64_t kBlock = 64;

// Rows of tiles per block, and the block's columns at most.
int64_t block_rows(const Plan& p) { return std::max<int64_t>(1, kBlock / p.tiles_w()); }
int64_t block_cols(const Plan& p) { return block_rows(p) * p.tiles_w(); }

// From one transform position xi to the next in a block buffer (16, rows, nb): rows * nb plus
// kSlack elements, rounded so that the 16 rows a tile's transform reads or writes do not fall a
// multiple of 4 KiB apart (in one L1 set: 3-4x slower transforms at C = 32, nb = 64).
int64_t xi_stride(int64_t rows, int64_t nb) {
  const int64_t s = rows * nb + kSlack;
  return s % 1024 == 0 ? s + 16 : s;
}

// The transforms' padded rows: 2 per tile row of a block plus 2, of at most 2 tiles_w() + 2 kSlack + 2.
int64_t scratch_size(const Plan& p) { return (2 * block_rows(p) + 2) * (2 * p.tiles_w() + 2 * kSlack + 2); }

// u = G f G^T for one 3x3 filter f (rows f[0..2], element (i, j) at f[3 i + j]; with kFlip the
// filter turned by 180 degrees, element (i, j) at f[8 - 3 i - j], read in place); u[xi] at
// u[xi * step].
template <bool kFlip, typename T>
void filter_tile(const T* f, T* u, int64_t step) {
  auto tap = [f](int i) { return f[kFlip ? 8 - i : i]; };
  T h[4][3];  // G f
  for (int j = 0; j < 3; ++j) {
    const T a = tap(j), b = tap(3 + j), c = tap(6 + j);
    h[0][j] = a;
    h[1][j] = T(0.5) * (a + b + c);
    h[2][j] = T(0.5) * (a - b + c);
    h[3][j] = c;
  }
  for (int i = 0; i < 4; ++i) {  // (G f) G^T
    const T a = h[i][0], b = h[i][1], c = h[i][2];
    u[(4 * i + 0) * step] = a;
    u[(4 * i + 1) * step] = T(0.5) * (a + b + c);
    u[(4 * i + 2) * step] = T(0.5) * (a - b + c);
    u[(4 * i + 3) * step] = c;
  }
}

// Runs body(a0, a1) over ranges of the o output channels, in parallel when the filters are many
// (each range writes its own part of the result: any split gives the same values).
template <class Body>
void over_outputs(int64_t o, int64_t c, const Body& body) {
  const int threads = o * c < 512 ? 1 : autograd::num_threads();
  const int64_t parts = std::min<int64_t>(o, 4 * threads);
  base::parallel_parts(threads, parts, [&](int64_t q) { body(o * q / parts, o * (q + 1) / parts); });
}

// The filters go through the transforms in runs of up to kRun whose 16 transformed values lie
// side by side in each of u's 16 planes, staged in a local buffer. The planes are o c elements
// apart, often a multiple of 4 KiB (one L1 set): one element per plane and filter at a time kept
// 16 lines of one set in play and missed L1 on nearly every access.
constexpr int64_t kRun = 16;

// n <= kRun filters w + l * wstep -> u[xi * plane + l].
template <bool kFlip, typename T>
void transform_run(const T* w, int64_t wstep, int64_t n, T* u, int64_t plane) {
  T buf[16][kRun];
  for (int64_t l = 0; l < n; ++l) filter_tile<kFlip>(w + l * wstep, &buf[0][l], kRun);
  for (int xi = 0; xi < 16; ++xi) std::memcpy(u + xi * plane, buf[xi], static_cast<size_t>(n) * sizeof(T));
}

template <typename T>
void transform_filter_impl(int64_t o, int64_t c, const T* w, T* u) {
  over_outputs(o, c, [&](int64_t a0, int64_t a1) {
    for (int64_t a = a0; a < a1; ++a)
      for (int64_t b = 0; b < c; b += kRun)
        transform_run<false>(w + (a * c + b) * 9, 9, std::min(kRun, c - b), u + a * c + b, o * c);
  });
}

template <typename T>
void transform_filter_flipped_impl(int64_t o, int64_t c, const T* w, T* u) {
  // u (16, C, O): the values of consecutive a are adjacent, so runs go along a.
  over_outputs(c, o, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t a = 0; a < o; a += kRun)
        transform_run<true>(w + (a * c + b) * 9, c * 9, std::min(kRun, o - a), u + b * o + a, o * c);
  });
}

// f = G^T q G for the 16 values q[xi * step] (the transform's adjoint: the filter's gradient).
template <typename T>
void filter_grad_tile(const T* q_in, int64_t step, T* f) {
  T q[16];
  for (int xi = 0; xi < 16; ++xi) q[xi] = q_in[xi * step];
  T h[3][4];  // G^T q
  for (int j = 0; j < 4; ++j) {
    h[0][j] = q[j] + T(0.5) * (q[4 + j] + q[8 + j]);
    h[1][j] = T(0.5) * (q[4 + j] - q[8 + j]);
    h[2][j] = T(0.5) * (q[4 + j] + q[8 + j]) + q[12 + j];
  }
  for (int i = 0; i < 3; ++i) {  // (G^T q) G
    f[3 * i + 0] = h[i][0] + T(0.5) * (h[i][1] + h[i][2]);
    f[3 * i + 1] = T(0.5) * (h[i][1] - h[i][2]);
    f[3 * i + 2] = T(0.5) * (h[i][1] + h[i][2]) + h[i][3];
  }
}

template <typename T>
void filter_grad_impl(int64_t o, int64_t c, const T* du, T* dw) {
  over_outputs(o, c, [&](int64_t a0, int64_t a1) {
    T buf[16][kRun];  // a run of du's values, staged as in transform_run
    for (int64_t a = a0; a < a1; ++a)
      for (int64_t b = 0; b < c; b += kRun) {
        const int64_t n = std::min(kRun, c - b);
        for (int xi = 0; xi < 16; ++xi)
          std::memcpy(buf[xi], du + (xi * o + a) * c + b, static_cast<size_t>(n) * sizeof(T));
        for (int64_t l = 0; l < n; ++l) filter_grad_tile(&buf[0][l], kRun, dw + (a * c + b + l) * 9);
      }
  });
}

template <typename T>
void conv_impl(const Plan& p, const T* u, const T* bias, const T* x, int64_t x_stride, T* y, int64_t y_stride,
               int64_t count, T* work) {
  const int64_t C = p.g.channels, O = p.outputs, rows = count * p.tiles_h(), step = block_rows(p);
  T* v = work;
  T* m = v + 16 * xi_stride(C, block_cols(p));
  T* scratch = m + 16 * xi_stride(O, block_cols(p));
  for (int64_t r0 = 0; r0 < rows; r0 += step) {
    const int64_t r1 = std::min(rows, r0 + step), nb = (r1 - r0) * p.tiles_w();
    const int64_t vs = xi_stride(C, nb), ms = xi_stride(O, nb);
    input_transform_block(p, x, x_stride, r0, r1, v, vs, scratch);
    GemmShape s;  // m[xi] (O, nb) = u[xi] (O, C) v[xi] (C, nb), xi = 0 .. 15
    s.m = O, s.n = nb, s.k = C, s.batch = 16, s.stride_a = O * C, s.stride_b = vs, s.stride_c = ms;
    gemm(s, u, v, m);
    output_transform_block(p, m, ms, bias, y, y_stride, r0, r1);
  }
}

template <typename T>
void weight_grad_impl(const Plan& p, const T* x, int64_t x_stride, const T* dy, int64_t dy_stride, int64_t count,
                      T* du, bool accumulate, T* work) {
  const int64_t C = p.g.channels, O = p.outputs, rows = count * p.tiles_h(), step = block_rows(p);
  if (rows == 0 && !accumulate) std::fill(du, du + 16 * O * C, T(0));
  T* v = work;
  T* dd = v + 16 * xi_stride(C, block_cols(p));
  T* scratch = dd + 16 * xi_stride(O, block_cols(p));
  for (int64_t r0 = 0; r0 < rows; r0 += step) {
    const int64_t r1 = std::min(rows, r0 + step), nb = (r1 - r0) * p.tiles_w();
    const int64_t vs = xi_stride(C, nb), ds = xi_stride(O, nb);
    input_transform_block(p, x, x_stride, r0, r1, v, vs, scratch);
    grad_transform_block(p, dy, dy_stride, r0, r1, dd, ds, scratch);
    GemmShape s;  // du[xi] (O, C) (+)= dd[xi] (O, nb) v[xi]^T, v[xi] stored (C, nb)
    s.trans_b = true, s.m = O, s.n = C, s.k = nb, s.batch = 16;
    s.stride_a = ds, s.stride_b = vs, s.stride_c = O * C, s.accumulate = accumulate || r0 > 0;
    gemm(s, dd, v, du);
  }
}

}  // namespace

bool applicable(const ConvGeometry& g, int64_t outputs) {
  return g.kh == 3 && g.kw == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dil_h == 1 && g.dil_w == 1 &&
         g.pad_h <= 2 && g.pad_w <= 2 && g.channels >= kMinChannels && outputs >= kMinChannels;
}

Plan input_grad_plan(const Plan& p) {
  Plan q;
  q.g = p.g;
  q.g.channels = p.outputs, q.g.h = p.g.oh, q.g.w = p.g.ow;
  q.g.pad_h = 2 - p.g.pad_h, q.g.pad_w = 2 - p.g.pad_w;
  q.g.oh = p.g.h, q.g.ow = p.g.w;
  q.outputs = p.g.channels;
  return q;
}

int64_t workspace(const Plan& p) {
  return 16 * (xi_stride(p.g.channels, block_cols(p)) + xi_stride(p.outputs, block_cols(p))) + scratch_size(p);
}

void transform_filter(int64_t o, int64_t c, const float* w, float* u) { transform_filter_impl(o, c, w, u); }
void transform_filter(int64_t o, int64_t c, const double* w, double* u) { transform_filter_impl(o, c, w, u); }
void transform_filter_flipped(int64_t o, int64_t c, const float* w, float* u) {
  transform_filter_flipped_impl(o, c, w, u);
}
void transform_filter_flipped(int64_t o, int64_t c, const double* w, double* u) {
  transform_filter_flipped_impl(o, c, w, u);
}
void filter_grad(int64_t o, int64_t c, const float* du, float* dw) { filter_grad_impl(o, c, du, dw); }
void filter_grad(int64_t o, int64_t c, const double* du, double* dw) { filter_grad_impl(o, c, du, dw); }

void conv(const Plan& p, const float* u, const float* bias, const float* x, int64_t x_stride, float* y,
          int64_t y_stride, int64_t count, float* work) {
  conv_impl(p, u, bias, x, x_stride, y, y_stride, count, work);
}
void conv(const Plan& p, const double* u, const double* bias, const double* x, int64_t x_stride, double* y,
          int64_t y_stride, int64_t count, double* work) {
  conv_impl(p, u, bias, x, x_stride, y, y_stride, count, work);
}
void weight_grad(const Plan& p, const float* x, int64_t x_stride, const float* dy, int64_t dy_stride, int64_t count,
                 float* du, bool accumulate, float* work) {
  weight_grad_impl(p, x, x_stride, dy, dy_stride, count, du, accumulate, work);
}
void weight_grad(const Plan& p, const double* x, int64_t x_stride, const double* dy, int64_t dy_stride,
                 int64_t count, double* du, bool accumulate, double* work) {
  weight_grad_impl(p, x, x_stride, dy, dy_stride, count, du, accumulate, work);
}

}  // namespace normlab::autograd::kernels::winograd
#endif  // HWY_ONCE
