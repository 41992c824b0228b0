// Differentiable 2-D convolution: forward and backward side by side. Each image is lowered to a
// column matrix (kernels/im2col.h) one at a time, never the whole batch at once, and multiplied with
// the packed GEMM (kernels/gemm.h). Per image n and group g, with K = C/groups * kH * kW rows of
// the column matrix and P = OH * OW output positions:
//   forward   y[n, g] (O/g, P)  = W[g] (O/g, K) col(x[n, g]) (K, P)  (+ b, by starting from it)
//   input     dx[n, g]          = col2im( W[g]^T (K, O/g) dy[n, g] (O/g, P) )
//   weight    dW[g] (O/g, K)   += dy[n, g] (O/g, P) col(x[n, g])^T (P, K), summed over n
//   bias      db[o]             = sum over n and P of dy[n, o]
// Images run in parallel on the kernels' thread pool (the GEMM inside then runs on one thread).
// The weight gradient sums over images in a fixed number of chunks (from N alone), each in image
// order, and the chunks in order: the same sums for any thread count. A 1x1 convolution with
// stride 1 and no padding reads x as its own column matrix. A 3x3 stride-1 convolution with at
// least 8 channels in and out per group runs through Winograd F(2x2, 3x3) instead
// (kernels/winograd.h): the same three products with 2.25x fewer multiplications, chunked and
// summed the same way.
#include "autograd/conv.h"

#include <algorithm>
#include <cstring>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/im2col.h"
#include "autograd/kernels/reduce.h"
#include "autograd/kernels/winograd.h"
#include "autograd/grain.h"
#include "autograd/reduce.h"
#include "base/thread_pool.h"

namespace normlab::autograd {

namespace k = kernels;
using Grads = std::vector<Tensor>;

int64_t conv_output_size(const std::string& who, int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                         int64_t dilation) {
  const int64_t span = dilation * (kernel - 1) + 1;  // the window's extent in the input
  if (in + 2 * padding < span)
    throw Error(who + ": the window (kernel " + std::to_string(kernel) + ", dilation " + std::to_string(dilation) +
                ": " + std::to_string(span) + " positions) is larger than the padded input (" + std::to_string(in) +
                " + 2 x padding " + std::to_string(padding) + " = " + std::to_string(in + 2 * padding) + ")");
  return (in + 2 * padding - span) / stride + 1;
}

namespace {

// The weight gradient's sum over images runs in this many chunks (fewer for a smaller batch).
constexpr int64_t kWeightChunks = 16;

struct ConvPlan {
  int64_t n = 0, c = 0, o = 0, groups = 1;
  k::ConvGeometry geo;  // one group of one image: geo.channels = C / groups
  bool direct = false;  // 1x1, stride 1, no padding: the image is its own column matrix
  bool winograd = false;  // 3x3, stride 1: Winograd F(2x2, 3x3) (kernels/winograd.h)
  int64_t og() const { return o / groups; }
  // The threads of one of the three products (each n o K P multiply-adds; autograd/grain.h).
  int threads() const { return threads_for(static_cast<double>(n) * o * K() * P(), grains().conv); }
  int64_t K() const { return geo.rows(); }
  int64_t P() const { return geo.cols(); }
  int64_t in_image() const { return c * geo.h * geo.w; }   // elements of one input image
  int64_t out_image() const { return o * P(); }             // elements of one output image
  int64_t in_group() const { return geo.channels * geo.h * geo.w; }
  k::winograd::Plan wino() const { return {geo, og()}; }
};

// Splits [0, n) into `chunks` near-equal ranges; returns range i.
std::pair<int64_t, int64_t> chunk_range(int64_t n, int64_t chunks, int64_t i) {
  return {n * i / chunks, n * (i + 1) / chunks};
}

// Runs body(chunk, n, first, g, col) for every image n and group g: the images split into `chunks`
// ranges run in parallel, in image order within a range (first: n is the range's first image),
// each range with its own column-matrix buffer col (K, P) (null for a direct convolution).
template <typename T, class Body>
void for_images(const ConvPlan& p, int64_t chunks, const Body& body) {
  const int64_t KP = p.K() * p.P();
  Tensor cols = p.direct ? Tensor() : empty({chunks, KP}, dtype_of<T>());
  T* col_base = p.direct ? nullptr : cols.data<T>();
  base::parallel_parts(p.threads(), chunks, [&](int64_t ch) {
    T* col = col_base ? col_base + ch * KP : nullptr;
    const auto [n0, n1] = chunk_range(p.n, chunks, ch);
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t g = 0; g < p.groups; ++g) body(ch, n, n == n0, g, col);
  });
}

// Runs body(chunk, n0, n1, work) for the images split into `chunks` ranges [n0, n1), in parallel,
// each with its own Winograd scratch buffer work.
template <typename T, class Body>
void for_image_ranges(const ConvPlan& p, int64_t chunks, const Body& body) {
  const int64_t size = k::winograd::workspace(p.wino());
  Tensor work = empty({chunks, size}, dtype_of<T>());
  base::parallel_parts(p.threads(), chunks, [&](int64_t ch) {
    const auto [n0, n1] = chunk_range(p.n, chunks, ch);
    body(ch, n0, n1, work.data<T>() + ch * size);
  });
}

// The Winograd forms of the three products (see the top of this file and kernels/winograd.h).
// y = conv(x) (+ b) through Winograd, or with `input_grad` dx = the input gradient for dy (the
// same convolution of dy with each group's filter turned and its channel axes swapped): in and
// out are x and y, or dy and dx.
template <typename T>
void winograd_conv(const ConvPlan& p, bool input_grad, const T* in, const T* w, const T* b, T* out) {
  const int64_t og = p.og(), cg = p.geo.channels, usize = 16 * og * cg;
  Tensor u = empty({p.groups, usize}, dtype_of<T>());
  for (int64_t g = 0; g < p.groups; ++g) {
    const T* wg = w + g * og * cg * 9;
    if (input_grad) k::winograd::transform_filter_flipped(og, cg, wg, u.data<T>() + g * usize);
    else k::winograd::transform_filter(og, cg, wg, u.data<T>() + g * usize);
  }
  const k::winograd::Plan plan = input_grad ? k::winograd::input_grad_plan(p.wino()) : p.wino();
  // Elements of one image, and of one group of it, on the input and the output side.
  const int64_t in_image = input_grad ? p.out_image() : p.in_image(), out_image = input_grad ? p.in_image() : p.out_image();
  const int64_t in_group = input_grad ? og * p.P() : p.in_group(), out_group = input_grad ? p.in_group() : og * p.P();
  for_image_ranges<T>(p, std::min<int64_t>(p.n, 4 * p.threads()), [&](int64_t, int64_t n0, int64_t n1, T* work) {
    for (int64_t g = 0; g < p.groups; ++g)
      k::winograd::conv(plan, u.data<T>() + g * usize, b ? b + g * og : nullptr, in + n0 * in_image + g * in_group,
                        in_image, out + n0 * out_image + g * out_group, out_image, n1 - n0, work);
  });
}

template <typename T>
void winograd_weight_grad(const ConvPlan& p, const T* dy, const T* x, T* dw) {
  const int64_t og = p.og(), cg = p.geo.channels, usize = 16 * og * cg, all = p.groups * usize;
  const int64_t chunks = std::max<int64_t>(1, std::min((p.n + 3) / 4, kWeightChunks));
  Tensor du = empty({chunks, all}, dtype_of<T>());  // one transform-domain gradient per chunk
  for_image_ranges<T>(p, chunks, [&](int64_t ch, int64_t n0, int64_t n1, T* work) {
    for (int64_t g = 0; g < p.groups; ++g)
      k::winograd::weight_grad(p.wino(), x + n0 * p.in_image() + g * p.in_group(), p.in_image(),
                               dy + n0 * p.out_image() + g * og * p.P(), p.out_image(), n1 - n0,
                               du.data<T>() + ch * all + g * usize, false, work);
  });
  T* sum = du.data<T>();
  for (int64_t ch = 1; ch < chunks; ++ch) {  // chunk 0 += chunk ch, in order
    const T* part = du.data<T>() + ch * all;
    for (int64_t i = 0; i < all; ++i) sum[i] += part[i];
  }
  for (int64_t g = 0; g < p.groups; ++g) k::winograd::filter_grad(og, cg, sum + g * usize, dw + g * og * cg * 9);
}

template <typename T>
void forward(const ConvPlan& p, const T* x, const T* w, const T* b, T* y) {
  if (p.winograd) return winograd_conv(p, false, x, w, b, y);
  const int64_t K = p.K(), P = p.P(), og = p.og();
  const int64_t chunks = std::min<int64_t>(p.n, 4 * p.threads());  // any split gives the same y
  for_images<T>(p, chunks, [&](int64_t, int64_t n, bool, int64_t g, T* col) {
    const T* xg = x + n * p.in_image() + g * p.in_group();
    T* yg = y + n * p.out_image() + g * og * P;
    if (!p.direct) k::im2col(p.geo, xg, col);
    k::GemmShape s;
    s.m = og, s.n = P, s.k = K;
    if (b) {  // start from the bias: row r of y is b[r] everywhere
      for (int64_t r = 0; r < og; ++r) k::fill(P, b[g * og + r], yg + r * P);
      s.accumulate = true;
    }
    if (K > 0) k::gemm(s, w + g * og * K, p.direct ? xg : col, yg);
    else if (!b) std::fill(yg, yg + og * P, T(0));
  });
}

template <typename T>
void input_grad(const ConvPlan& p, const T* dy, const T* w, T* dx) {
  if (p.winograd) return winograd_conv(p, true, dy, w, static_cast<const T*>(nullptr), dx);
  const int64_t K = p.K(), P = p.P(), og = p.og();
  for_images<T>(p, std::min<int64_t>(p.n, 4 * p.threads()), [&](int64_t, int64_t n, bool, int64_t g, T* col) {
    T* dxg = dx + n * p.in_image() + g * p.in_group();
    // dcol (K, P) = W[g]^T dy[n, g]: W[g] is stored (O/g, K), read transposed.
    k::GemmShape s;
    s.trans_a = true, s.m = K, s.n = P, s.k = og;
    T* dcol = p.direct ? dxg : col;
    if (og > 0) k::gemm(s, w + g * og * K, dy + n * p.out_image() + g * og * P, dcol);
    else std::fill(dcol, dcol + K * P, T(0));
    if (!p.direct) k::col2im(p.geo, col, dxg);
  });
}

template <typename T>
void weight_grad(const ConvPlan& p, const T* dy, const T* x, T* dw) {
  const int64_t K = p.K(), P = p.P(), og = p.og(), wsize = p.o * K;
  if (p.n == 0 || P == 0) {
    std::fill(dw, dw + wsize, T(0));
    return;
  }
  if (p.winograd) return winograd_weight_grad(p, dy, x, dw);
  const int64_t chunks = std::min(p.n, kWeightChunks);
  // One partial gradient per chunk (the first chunk writes dw itself).
  Tensor partials = chunks > 1 ? empty({chunks - 1, wsize}, dtype_of<T>()) : Tensor();
  for_images<T>(p, chunks, [&](int64_t ch, int64_t n, bool first, int64_t g, T* col) {
    T* part = ch == 0 ? dw : partials.data<T>() + (ch - 1) * wsize;
    const T* xg = x + n * p.in_image() + g * p.in_group();
    if (!p.direct) k::im2col(p.geo, xg, col);
    // dW[g] (O/g, K) (+)= dy[n, g] (O/g, P) col^T, col stored (K, P).
    k::GemmShape s;
    s.trans_b = true, s.m = og, s.n = K, s.k = P, s.accumulate = !first;
    k::gemm(s, dy + n * p.out_image() + g * og * P, p.direct ? xg : col, part + g * og * K);
  });
  for (int64_t ch = 1; ch < chunks; ++ch) {  // dw += partial, chunk by chunk in order
    const T* part = partials.data<T>() + (ch - 1) * wsize;
    for (int64_t i = 0; i < wsize; ++i) dw[i] += part[i];
  }
}

template <typename T>
void bias_grad(const ConvPlan& p, const T* dy, T* db) {
  // db[o] = sum_n (sum_P dy[n, o, P]): first over positions, then over images.
  Tensor per_image = empty({p.n, p.o}, dtype_of<T>());
  if (p.n * p.o > 0) k::reduce(k::ReduceOp::Sum, p.n * p.o, p.P(), 1, dy, per_image.data<T>());
  k::reduce(k::ReduceOp::Sum, 1, p.n, p.o, per_image.data<T>(), db);
}

// The convolution is bilinear in (x, w), so its two gradients are bilinear too and, recorded as
// ops (in a create_graph pass), each one's backward is made of the convolution and the two of them:
//   dx = input_grad(dy, w):  <G, dx> = <conv(G, w), dy> = <w, weight_grad(dy, G)>
//   dw = weight_grad(dy, x): <G, dw> = <conv(x, G), dy> = <x, input_grad(dy, G)>
// (PyTorch's _convolution_double_backward). Differentiable to any order.
Tensor weight_grad_op(const ConvPlan& p, const Conv2dOptions& o, const Tensor& dy, const Tensor& x, const Shape& ws);

Tensor input_grad_op(const ConvPlan& p, const Conv2dOptions& o, const Tensor& dy, const Tensor& w, const Shape& xs) {
  Tensor gx = empty(xs, dy.dtype());
  if (gx.numel() > 0)
    dispatch(dy.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if (dy.numel() > 0) input_grad<T>(p, dy.data<T>(), w.data<T>(), gx.data<T>());
      else fill_(gx, 0);
    });
  return record("ConvolutionBackwardInput", gx, {dy, w}, [p, o, dy, w, ws = w.shape()](const Tensor& g, const Needs& n) {
    return Grads{n[0] ? conv2d(g, w, Tensor(), o) : Tensor(), n[1] ? weight_grad_op(p, o, dy, g, ws) : Tensor()};
  }, Backward::Differentiable);
}

Tensor weight_grad_op(const ConvPlan& p, const Conv2dOptions& o, const Tensor& dy, const Tensor& x, const Shape& ws) {
  Tensor gw = empty(ws, dy.dtype());
  if (gw.numel() > 0)
    dispatch(dy.dtype(), [&](auto zero) {
      using T = decltype(zero);
      weight_grad<T>(p, dy.data<T>(), x.data<T>(), gw.data<T>());
    });
  return record("ConvolutionBackwardWeight", gw, {dy, x}, [p, o, dy, x, xs = x.shape()](const Tensor& g, const Needs& n) {
    return Grads{n[0] ? conv2d(x, g, Tensor(), o) : Tensor(), n[1] ? input_grad_op(p, o, dy, g, xs) : Tensor()};
  }, Backward::Differentiable);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  const auto sizes = [&] {
    return "input " + shape_str(x.shape()) + ", weight " + shape_str(weight.shape()) +
           (bias.defined() ? ", bias " + shape_str(bias.shape()) : std::string());
  };
  if (x.dim() != 4)
    throw Error("conv2d: expected a 4-D input (N, C, H, W), got shape " + shape_str(x.shape()));
  if (weight.dim() != 4)
    throw Error("conv2d: expected a 4-D weight (out_channels, in_channels / groups, kH, kW), got shape " +
                shape_str(weight.shape()));
  if (x.dtype() != weight.dtype() || (bias.defined() && bias.dtype() != x.dtype()))
    throw Error("conv2d: input, weight and bias must have the same dtype (" + sizes() + ")");
  for (int d = 0; d < 2; ++d) {
    if (o.stride[d] < 1 || o.dilation[d] < 1 || o.padding[d] < 0)
      throw Error("conv2d: stride and dilation must be at least 1 and padding at least 0, got stride (" +
                  std::to_string(o.stride[0]) + ", " + std::to_string(o.stride[1]) + "), padding (" +
                  std::to_string(o.padding[0]) + ", " + std::to_string(o.padding[1]) + "), dilation (" +
                  std::to_string(o.dilation[0]) + ", " + std::to_string(o.dilation[1]) + ")");
  }
  ConvPlan p;
  p.n = x.size(0), p.c = x.size(1), p.o = weight.size(0), p.groups = o.groups;
  if (o.groups < 1) throw Error("conv2d: groups must be at least 1, got " + std::to_string(o.groups));
  if (p.o % o.groups != 0)
    throw Error("conv2d: out_channels (" + std::to_string(p.o) + ") must be divisible by groups (" +
                std::to_string(o.groups) + ")");
  if (weight.size(1) * o.groups != p.c)
    throw Error("conv2d: given groups=" + std::to_string(o.groups) + ", a weight of shape " + shape_str(weight.shape()) +
                " expects an input with " + std::to_string(weight.size(1) * o.groups) + " channels, got " +
                std::to_string(p.c) + " channels (input " + shape_str(x.shape()) + ")");
  if (bias.defined() && bias.shape() != Shape{p.o})
    throw Error("conv2d: expected a bias of shape " + shape_str({p.o}) + ", got " + shape_str(bias.shape()));
  k::ConvGeometry& g = p.geo;
  g.channels = p.c / o.groups, g.h = x.size(2), g.w = x.size(3), g.kh = weight.size(2), g.kw = weight.size(3);
  g.stride_h = o.stride[0], g.stride_w = o.stride[1], g.pad_h = o.padding[0], g.pad_w = o.padding[1];
  g.dil_h = o.dilation[0], g.dil_w = o.dilation[1];
  if (g.kh < 1 || g.kw < 1) throw Error("conv2d: the kernel must be at least 1x1, got weight " + shape_str(weight.shape()));
  g.oh = conv_output_size("conv2d (height, " + sizes() + ")", g.h, g.kh, g.stride_h, g.pad_h, g.dil_h);
  g.ow = conv_output_size("conv2d (width, " + sizes() + ")", g.w, g.kw, g.stride_w, g.pad_w, g.dil_w);
  p.direct = g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
  p.winograd = k::winograd::applicable(g, p.og());

  Tensor out = empty({p.n, p.o, g.oh, g.ow}, x.dtype());
  if (out.numel() > 0)
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      forward<T>(p, x.data<T>(), weight.data<T>(), bias.defined() ? bias.data<T>() : nullptr, out.data<T>());
    });
  // Saves x only if the weight needs a gradient, and the weight only if x does.
  return record("ConvolutionBackward0", out, {x, weight, bias},
                [x = weight.requires_grad() ? saved(x) : Tensor(), w = x.requires_grad() ? saved(weight) : Tensor(),
                 xs = x.shape(), ws = weight.shape(), dt = x.dtype(), p, o](const Tensor& dy, const Needs& n) {
                  Tensor gx, gw, gb;
                  if (grad_enabled()) {  // a create_graph pass: the gradients as recorded ops
                    if (n[0]) gx = input_grad_op(p, o, dy, w, xs);
                    if (n[1]) gw = weight_grad_op(p, o, dy, x, ws);
                    if (n[2]) gb = sum(dy, {0, 2, 3}, false);
                    return Grads{gx, gw, gb};
                  }
                  dispatch(dt, [&](auto zero) {
                    using T = decltype(zero);
                    if (n[0]) {
                      gx = empty(xs, dt);
                      if (gx.numel() > 0) {
                        if (dy.numel() > 0) input_grad<T>(p, dy.data<T>(), w.data<T>(), gx.data<T>());
                        else fill_(gx, 0);
                      }
                    }
                    if (n[1]) {
                      gw = empty(ws, dt);
                      if (gw.numel() > 0) weight_grad<T>(p, dy.data<T>(), x.data<T>(), gw.data<T>());
                    }
                    if (n[2]) {
                      gb = empty({p.o}, dt);
                      if (p.o > 0) bias_grad<T>(p, dy.data<T>(), gb.data<T>());
                    }
                  });
                  return Grads{gx, gw, gb};
                }, Backward::Differentiable);
}

}  // namespace normlab::autograd
