// Differentiable 2-D pooling: forward and backward side by side. Planes (n, c) are independent,
// so they run in parallel on the kernels' thread pool in chunks, each plane's sums in a fixed order:
// results do not depend on the thread count.
#include "autograd/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "autograd/conv.h"
#include "autograd/engine.h"
#include "autograd/kernels/pooling.h"
#include "autograd/grain.h"
#include "base/thread_pool.h"

namespace normlab::autograd {

using Grads = std::vector<Tensor>;

namespace {

struct PoolPlan {
  int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool count_include_pad = true;
};

// Runs body(plane) for every plane, in parallel chunks.
template <class Body>
void for_planes(int64_t planes, int64_t plane_work, const Body& body) {
  // Small jobs stay on the calling thread (autograd/grain.h).
  const int threads = threads_for(static_cast<double>(planes) * plane_work, grains().pooling);
  const int64_t chunks = std::min<int64_t>(planes, 4 * threads);
  base::parallel_parts(threads, chunks, [&](int64_t ch) {
    for (int64_t q = planes * ch / chunks; q < planes * (ch + 1) / chunks; ++q) body(q);
  });
}

// Runs body(q0, q1) over chunks of planes [q0, q1), in parallel (the Highway kernels' calls).
template <class Body>
void for_plane_chunks(int64_t planes, int64_t plane_work, const Body& body) {
  const int threads = threads_for(static_cast<double>(planes) * plane_work, grains().pooling);
  const int64_t chunks = std::min<int64_t>(planes, 4 * threads);
  base::parallel_parts(threads, chunks,
                       [&](int64_t ch) { body(planes * ch / chunks, planes * (ch + 1) / chunks); });
}

std::string pair_str(std::array<int64_t, 2> a) {
  return "(" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ")";
}

PoolPlan plan(const char* who, const Tensor& x, const Pool2dOptions& o, bool with_dilation) {
  const std::string name = who;
  if (x.dim() != 4) throw Error(name + ": expected a 4-D input (N, C, H, W), got shape " + shape_str(x.shape()));
  std::array<int64_t, 2> stride = o.stride;
  if (stride[0] == 0 && stride[1] == 0) stride = o.kernel;
  for (int d = 0; d < 2; ++d) {
    if (o.kernel[d] < 1 || stride[d] < 1 || o.dilation[d] < 1 || o.padding[d] < 0)
      throw Error(name + ": kernel, stride and dilation must be at least 1 and padding at least 0, got kernel " +
                  pair_str(o.kernel) + ", stride " + pair_str(stride) + ", padding " + pair_str(o.padding) +
                  ", dilation " + pair_str(o.dilation));
    if (o.padding[d] > o.kernel[d] / 2)
      throw Error(name + ": padding must be at most half the kernel size, got padding " + pair_str(o.padding) +
                  " for kernel " + pair_str(o.kernel));
  }
  if (!with_dilation && (o.dilation[0] != 1 || o.dilation[1] != 1))
    throw Error(name + ": has no dilation (got " + pair_str(o.dilation) + ")");
  PoolPlan p;
  p.planes = x.size(0) * x.size(1), p.h = x.size(2), p.w = x.size(3);
  p.kh = o.kernel[0], p.kw = o.kernel[1], p.sh = stride[0], p.sw = stride[1];
  p.ph = o.padding[0], p.pw = o.padding[1], p.dh = o.dilation[0], p.dw = o.dilation[1];
  p.count_include_pad = o.count_include_pad;
  const std::string where = " of input " + shape_str(x.shape()) + ")";
  p.oh = conv_output_size(name + " (height" + where, p.h, p.kh, p.sh, p.ph, p.dh);
  p.ow = conv_output_size(name + " (width" + where, p.w, p.kw, p.sw, p.pw, p.dw);
  return p;
}

// The window of the pooling kernels (kernels/pooling.h): 2x2, stride 2, no padding or dilation.
bool is_2x2(const PoolPlan& p) {
  return p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2 && p.ph == 0 && p.pw == 0 && p.dh == 1 && p.dw == 1;
}

// ---- max ----------------------------------------------------------------------------------------

// y = window max; idx = its position in the plane (h * W + w). As PyTorch's CPU kernel: the scan
// starts from -inf at the first position inside the image, takes a value when it is greater (the
// first maximum wins a tie) or NaN (the last NaN wins).
template <typename T>
void max_forward(const PoolPlan& p, const T* x, T* y, int32_t* idx) {
  if (is_2x2(p)) {  // the common window: the Highway kernel (the same scan)
    const int64_t in = p.h * p.w, out = p.oh * p.ow;
    for_plane_chunks(p.planes, in, [&](int64_t q0, int64_t q1) {
      kernels::max_pool_2x2(q1 - q0, p.h, p.w, x + q0 * in, y + q0 * out, idx + q0 * out);
    });
    return;
  }
  for_planes(p.planes, p.h * p.w, [&](int64_t q) {
    const T* in = x + q * p.h * p.w;
    T* out = y + q * p.oh * p.ow;
    int32_t* ix = idx + q * p.oh * p.ow;
    for (int64_t oy = 0; oy < p.oh; ++oy) {
      int64_t h0 = oy * p.sh - p.ph;
      const int64_t h1 = std::min(h0 + (p.kh - 1) * p.dh + 1, p.h);
      while (h0 < 0) h0 += p.dh;
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        int64_t w0 = ox * p.sw - p.pw;
        const int64_t w1 = std::min(w0 + (p.kw - 1) * p.dw + 1, p.w);
        while (w0 < 0) w0 += p.dw;
        T best = -std::numeric_limits<T>::infinity();
        int64_t at = h0 * p.w + w0;
        for (int64_t ih = h0; ih < h1; ih += p.dh)
          for (int64_t iw = w0; iw < w1; iw += p.dw) {
            const T v = in[ih * p.w + iw];
            if (v > best || std::isnan(v)) best = v, at = ih * p.w + iw;
          }
        out[oy * p.ow + ox] = best;
        ix[oy * p.ow + ox] = static_cast<int32_t>(at);
      }
    }
  });
}

template <typename T>
void max_backward(const PoolPlan& p, const T* dy, const int32_t* idx, T* dx) {
  if (is_2x2(p)) {
    const int64_t in = p.h * p.w, out = p.oh * p.ow;
    for_plane_chunks(p.planes, in, [&](int64_t q0, int64_t q1) {
      kernels::max_pool_2x2_backward(q1 - q0, p.h, p.w, dy + q0 * out, idx + q0 * out, dx + q0 * in);
    });
    return;
  }
  for_planes(p.planes, p.h * p.w, [&](int64_t q) {
    T* g = dx + q * p.h * p.w;
    std::fill(g, g + p.h * p.w, T(0));
    const T* d = dy + q * p.oh * p.ow;
    const int32_t* ix = idx + q * p.oh * p.ow;
    for (int64_t i = 0; i < p.oh * p.ow; ++i) g[ix[i]] += d[i];
  });
}

// ---- average ------------------------------------------------------------------------------------

// The window of output (oy, ox) of avg_pool2d: rows [h0, h1), columns [w0, w1) inside the image,
// and its divisor.
struct Window {
  int64_t h0, h1, w0, w1, divisor;
};

Window avg_window(const PoolPlan& p, int64_t oy, int64_t ox) {
  int64_t h0 = oy * p.sh - p.ph, w0 = ox * p.sw - p.pw;
  int64_t h1 = std::min(h0 + p.kh, p.h + p.ph), w1 = std::min(w0 + p.kw, p.w + p.pw);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, p.h), w1 = std::min(w1, p.w);
  return {h0, h1, w0, w1, p.count_include_pad ? padded : (h1 - h0) * (w1 - w0)};
}

// adaptive_avg_pool2d's window: rows [floor(i H / OH), ceil((i + 1) H / OH)), columns alike.
Window adaptive_window(const PoolPlan& p, int64_t oy, int64_t ox) {
  const int64_t h0 = oy * p.h / p.oh, h1 = ((oy + 1) * p.h + p.oh - 1) / p.oh;
  const int64_t w0 = ox * p.w / p.ow, w1 = ((ox + 1) * p.w + p.ow - 1) / p.ow;
  return {h0, h1, w0, w1, (h1 - h0) * (w1 - w0)};
}

// The kernels' cases: avg_pool2d's 2x2 window (the divisor is 4 with or without count_include_pad:
// no padding) and adaptive_avg_pool2d to 1x1 (the global average).
enum class AvgKernel { kNone, k2x2, kGlobal };

template <typename T, class WindowOf>
void avg_forward(const PoolPlan& p, AvgKernel kernel, const WindowOf& window_of, const T* x, T* y) {
  const int64_t in = p.h * p.w, out = p.oh * p.ow;
  if (kernel != AvgKernel::kNone) {
    for_plane_chunks(p.planes, in, [&](int64_t q0, int64_t q1) {
      if (kernel == AvgKernel::k2x2) kernels::avg_pool_2x2(q1 - q0, p.h, p.w, x + q0 * in, y + q0 * out);
      else kernels::global_avg_pool(q1 - q0, in, x + q0 * in, y + q0);
    });
    return;
  }
  for_planes(p.planes, p.h * p.w, [&](int64_t q) {
    const T* in = x + q * p.h * p.w;
    T* out = y + q * p.oh * p.ow;
    for (int64_t oy = 0; oy < p.oh; ++oy)
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        const Window win = window_of(p, oy, ox);
        T sum = 0;
        for (int64_t ih = win.h0; ih < win.h1; ++ih)
          for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += in[ih * p.w + iw];
        out[oy * p.ow + ox] = sum / static_cast<T>(win.divisor);
      }
  });
}

template <typename T, class WindowOf>
void avg_backward(const PoolPlan& p, AvgKernel kernel, const WindowOf& window_of, const T* dy, T* dx) {
  const int64_t in = p.h * p.w, out = p.oh * p.ow;
  if (kernel != AvgKernel::kNone) {
    for_plane_chunks(p.planes, in, [&](int64_t q0, int64_t q1) {
      if (kernel == AvgKernel::k2x2) kernels::avg_pool_2x2_backward(q1 - q0, p.h, p.w, dy + q0 * out, dx + q0 * in);
      else kernels::global_avg_pool_backward(q1 - q0, in, dy + q0, dx + q0 * in);
    });
    return;
  }
  for_planes(p.planes, p.h * p.w, [&](int64_t q) {
    T* g = dx + q * p.h * p.w;
    std::fill(g, g + p.h * p.w, T(0));
    const T* d = dy + q * p.oh * p.ow;
    for (int64_t oy = 0; oy < p.oh; ++oy)
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        const Window win = window_of(p, oy, ox);
        const T share = d[oy * p.ow + ox] / static_cast<T>(win.divisor);
        for (int64_t ih = win.h0; ih < win.h1; ++ih)
          for (int64_t iw = win.w0; iw < win.w1; ++iw) g[ih * p.w + iw] += share;
      }
  });
}

// The average pooling of x (N, C, H, W) by plan p, recorded; its backward is avg_pool_grad. Both
// are linear, each the other's adjoint, so each one's backward is the other: differentiable to any
// order.
template <class WindowOf>
Tensor avg_pool(const char* name, const Tensor& x, const PoolPlan& p, AvgKernel kernel, WindowOf window_of);

// dx (of shape xs) = the adjoint of the average pooling applied to dy, recorded (in a create_graph
// pass) with avg_pool as its backward.
template <class WindowOf>
Tensor avg_pool_grad(const char* name, const Tensor& dy, const PoolPlan& p, AvgKernel kernel, WindowOf window_of,
                     const Shape& xs) {
  Tensor dx = empty(xs, dy.dtype());
  if (dx.numel() > 0)
    dispatch(dy.dtype(), [&](auto zero) {
      using T = decltype(zero);
      avg_backward<T>(p, kernel, window_of, dy.data<T>(), dx.data<T>());
    });
  return record("AvgPoolBackwardBackward", dx, {dy}, [name, p, kernel, window_of](const Tensor& g, const Needs&) {
    return Grads{avg_pool(name, g, p, kernel, window_of)};
  }, Backward::Differentiable);
}

template <class WindowOf>
Tensor avg_pool(const char* name, const Tensor& x, const PoolPlan& p, AvgKernel kernel, WindowOf window_of) {
  Tensor out = empty({x.size(0), x.size(1), p.oh, p.ow}, x.dtype());
  if (out.numel() > 0)
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      avg_forward<T>(p, kernel, window_of, x.data<T>(), out.data<T>());
    });
  return record(name, out, {x}, [name, p, kernel, window_of, xs = x.shape()](const Tensor& dy, const Needs&) {
    return Grads{avg_pool_grad(name, dy, p, kernel, window_of, xs)};
  }, Backward::Differentiable);
}

// Max pooling's backward, dx = dy scattered to the argmax positions idx (int32 in a float32 buffer,
// one per output), and its adjoint, y = gx gathered from them; recorded, each the other's backward.
Tensor max_scatter(const PoolPlan& p, const Tensor& idx, const Shape& xs, const Tensor& dy);

Tensor max_gather(const PoolPlan& p, const Tensor& idx, const Shape& xs, const Tensor& gx) {
  Tensor y = empty({xs[0], xs[1], p.oh, p.ow}, gx.dtype());
  const int64_t in = p.h * p.w, out = p.oh * p.ow;
  const int32_t* at = static_cast<const int32_t*>(idx.raw_data());
  if (y.numel() > 0)
    dispatch(gx.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* g = gx.data<T>();
      T* d = y.data<T>();
      for (int64_t q = 0; q < p.planes; ++q)
        for (int64_t i = 0; i < out; ++i) d[q * out + i] = g[q * in + at[q * out + i]];
    });
  return record("MaxPoolGatherBackward", y, {gx}, [p, idx, xs](const Tensor& dy, const Needs&) {
    return Grads{max_scatter(p, idx, xs, dy)};
  }, Backward::Differentiable);
}

Tensor max_scatter(const PoolPlan& p, const Tensor& idx, const Shape& xs, const Tensor& dy) {
  Tensor dx = empty(xs, dy.dtype());
  if (dx.numel() > 0)
    dispatch(dy.dtype(), [&](auto zero) {
      using T = decltype(zero);
      max_backward<T>(p, dy.data<T>(), static_cast<const int32_t*>(idx.raw_data()), dx.data<T>());
    });
  return record("MaxPool2DWithIndicesBackwardBackward0", dx, {dy}, [p, idx, xs](const Tensor& g, const Needs&) {
    return Grads{max_gather(p, idx, xs, g)};
  }, Backward::Differentiable);
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o) {
  const PoolPlan p = plan("max_pool2d", x, o, true);
  if (p.h * p.w > std::numeric_limits<int32_t>::max())
    throw Error("max_pool2d: planes of more than 2^31 - 1 elements are not supported, got input " + shape_str(x.shape()));
  Tensor out = empty({x.size(0), x.size(1), p.oh, p.ow}, x.dtype());
  // The argmax of each output, int32, kept in a float32 tensor's buffer (4 bytes an element): the
  // caching allocator hands it out again each step, without a fresh zeroed allocation.
  Tensor idx = empty({out.numel()}, DType::Float32);
  int32_t* at = static_cast<int32_t*>(idx.raw_data());
  if (out.numel() > 0)
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      max_forward<T>(p, x.data<T>(), out.data<T>(), at);
    });
  // The argmax is constant almost everywhere: the backward is linear in dy (max_scatter).
  return record("MaxPool2DWithIndicesBackward0", out, {x}, [p, idx, xs = x.shape()](const Tensor& dy, const Needs&) {
    return Grads{max_scatter(p, idx, xs, dy)};
  }, Backward::Differentiable);
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) {
  const PoolPlan p = plan("avg_pool2d", x, o, false);
  return avg_pool("AvgPool2DBackward0", x, p, is_2x2(p) ? AvgKernel::k2x2 : AvgKernel::kNone, avg_window);
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
  if (x.dim() != 4)
    throw Error("adaptive_avg_pool2d: expected a 4-D input (N, C, H, W), got shape " + shape_str(x.shape()));
  if (output_size[0] < 1 || output_size[1] < 1)
    throw Error("adaptive_avg_pool2d: the output size must be at least 1x1, got " + pair_str(output_size));
  if (x.size(2) < 1 || x.size(3) < 1)
    throw Error("adaptive_avg_pool2d: expected an input with non-empty planes, got shape " + shape_str(x.shape()));
  PoolPlan p;
  p.planes = x.size(0) * x.size(1), p.h = x.size(2), p.w = x.size(3), p.oh = output_size[0], p.ow = output_size[1];
  // Output 1x1 is the global average; an exact halving has the 2x2 windows.
  const AvgKernel kernel = p.oh == 1 && p.ow == 1               ? AvgKernel::kGlobal
                           : p.h == 2 * p.oh && p.w == 2 * p.ow ? AvgKernel::k2x2
                                                                : AvgKernel::kNone;
  return avg_pool("AdaptiveAvgPool2DBackward0", x, p, kernel, adaptive_window);
}

}  // namespace normlab::autograd
