// Elementwise kernels: compiled once per Highway target, dispatched at run time; large calls split
// over the thread pool.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/elementwise-inl.h"
#include "hwy/highway.h"

#if HWY_ONCE
#include <algorithm>

#include "autograd/kernels/stream.h"
#include "autograd/grain.h"
#include "base/thread_pool.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
void BinaryF32(BinaryOp op, const BroadcastPlan& p, const float* a, const float* b, float* o, bool stream) {
  Binary(op, p, a, b, o, stream);
}
void BinaryF64(BinaryOp op, const BroadcastPlan& p, const double* a, const double* b, double* o, bool stream) {
  Binary(op, p, a, b, o, stream);
}
void UnaryF32(UnaryOp op, int64_t n, const float* x, float* y, double p, bool stream) { Unary(op, n, x, y, p, stream); }
void UnaryF64(UnaryOp op, int64_t n, const double* x, double* y, double p, bool stream) { Unary(op, n, x, y, p, stream); }
void UnaryGradF32(UnaryGradOp op, int64_t n, const float* v, const float* g, float* dx, double p, bool stream) {
  UnaryGrad(op, n, v, g, dx, p, stream);
}
void UnaryGradF64(UnaryGradOp op, int64_t n, const double* v, const double* g, double* dx, double p, bool stream) {
  UnaryGrad(op, n, v, g, dx, p, stream);
}
void GeluForwardF32(int64_t n, const float* x, float* y, float* dydx) { GeluForward(n, x, y, dydx); }
void GeluForwardF64(int64_t n, const double* x, double* y, double* dydx) { GeluForward(n, x, y, dydx); }
void AxpyF32(int64_t n, double alpha, const float* x, float* y) { Axpy(n, alpha, x, y); }
void AxpyF64(int64_t n, double alpha, const double* x, double* y) { Axpy(n, alpha, x, y); }
void FillF32(int64_t n, float value, float* out) { Fill(n, value, out); }
void FillF64(int64_t n, double value, double* out) { Fill(n, value, out); }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(UnaryGradF32);
HWY_EXPORT(UnaryGradF64);
HWY_EXPORT(GeluForwardF32);
HWY_EXPORT(GeluForwardF64);
HWY_EXPORT(AxpyF32);
HWY_EXPORT(AxpyF64);
HWY_EXPORT(FillF32);
HWY_EXPORT(FillF64);

namespace {

// Elementwise work runs on the thread pool in parts when it has at least two grains of elements
// (autograd/grain.h). Every element is computed by the same lane arithmetic whichever part (and
// whether the vector body or the one-lane tail) it falls in, so the results do not depend on the
// thread count.
int elementwise_threads(int64_t n) {
  return autograd::threads_for(static_cast<double>(n), autograd::grains().elementwise);
}

// Runs fn(begin, end) over [0, n): in one call when small, else in 4 parts per thread.
template <class Fn>
void in_parts(int64_t n, const Fn& fn) {
  base::parallel_blocks(elementwise_threads(n), n, 4, fn);
}

// The number of output elements of plan p.
int64_t plan_elems(const BroadcastPlan& p) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.size[d];
  return total;
}

// The operands of plan p that are as large as its output (a broadcast one, a bias row or a
// scalar, is small: it stays cached).
int full_inputs(const BroadcastPlan& p) {
  auto full = [&](const int64_t* stride) {
    for (int d = 0; d < p.rank; ++d)
      if (stride[d] == 0 && p.size[d] > 1) return false;
    return true;
  };
  return int(full(p.sa)) + int(full(p.sb));
}

// A broadcast binary op split along its outermost dim (the plan's rows are independent).
template <typename T, class Kernel>
void binary_in_parts(const BroadcastPlan& p, const T* a, const T* b, T* out, const Kernel& kernel) {
  const int64_t total = plan_elems(p);
  int64_t inner = 1;
  for (int d = 1; d < p.rank; ++d) inner *= p.size[d];
  const int threads = elementwise_threads(total);
  if (p.rank == 0 || threads <= 1) return kernel(p, a, b, out);
  if (p.rank == 1) {  // flat: split the one loop
    return in_parts(total, [&](int64_t i0, int64_t i1) {
      BroadcastPlan part = p;
      part.size[0] = i1 - i0;
      kernel(part, a + i0 * p.sa[0], b + i0 * p.sb[0], out + i0);
    });
  }
  const int64_t rows = p.size[0], parts = std::min<int64_t>(4 * threads, rows);
  if (threads <= 1 || parts < 2) return kernel(p, a, b, out);
  base::parallel_parts(threads, parts, [&](int64_t q) {
    const int64_t r0 = rows * q / parts, r1 = rows * (q + 1) / parts;
    BroadcastPlan part = p;
    part.size[0] = r1 - r0;
    if (r0 < r1) kernel(part, a + r0 * p.sa[0], b + r0 * p.sb[0], out + r0 * inner);
  });
}

}  // namespace

// Outputs that cannot stay cached beside their inputs are written with non-temporal stores
// (stream.h); the decision depends on the whole op, never on the parts.
void binary(BinaryOp op, const BroadcastPlan& p, const float* a, const float* b, float* out) {
  const bool stream = stream_elementwise(plan_elems(p), full_inputs(p), sizeof(float));
  binary_in_parts(p, a, b, out, [op, stream](const BroadcastPlan& q, const float* x, const float* y, float* z) {
    HWY_DYNAMIC_DISPATCH(BinaryF32)(op, q, x, y, z, stream);
  });
}
void binary(BinaryOp op, const BroadcastPlan& p, const double* a, const double* b, double* out) {
  const bool stream = stream_elementwise(plan_elems(p), full_inputs(p), sizeof(double));
  binary_in_parts(p, a, b, out, [op, stream](const BroadcastPlan& q, const double* x, const double* y, double* z) {
    HWY_DYNAMIC_DISPATCH(BinaryF64)(op, q, x, y, z, stream);
  });
}
void unary(UnaryOp op, int64_t n, const float* x, float* y, double p) {
  const bool stream = stream_elementwise(n, 1, sizeof(float));
  in_parts(n, [&](int64_t b, int64_t e) { HWY_DYNAMIC_DISPATCH(UnaryF32)(op, e - b, x + b, y + b, p, stream); });
}
void unary(UnaryOp op, int64_t n, const double* x, double* y, double p) {
  const bool stream = stream_elementwise(n, 1, sizeof(double));
  in_parts(n, [&](int64_t b, int64_t e) { HWY_DYNAMIC_DISPATCH(UnaryF64)(op, e - b, x + b, y + b, p, stream); });
}
void unary_grad(UnaryGradOp op, int64_t n, const float* v, const float* g, float* dx, double p) {
  const bool stream = stream_elementwise(n, 2, sizeof(float));
  in_parts(n, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(UnaryGradF32)(op, e - b, v + b, g + b, dx + b, p, stream);
  });
}
void unary_grad(UnaryGradOp op, int64_t n, const double* v, const double* g, double* dx, double p) {
  const bool stream = stream_elementwise(n, 2, sizeof(double));
  in_parts(n, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(UnaryGradF64)(op, e - b, v + b, g + b, dx + b, p, stream);
  });
}
void gelu_forward(int64_t n, const float* x, float* y, float* dydx) {
  in_parts(n, [&](int64_t b, int64_t e) { HWY_DYNAMIC_DISPATCH(GeluForwardF32)(e - b, x + b, y + b, dydx + b); });
}
void gelu_forward(int64_t n, const double* x, double* y, double* dydx) {
  in_parts(n, [&](int64_t b, int64_t e) { HWY_DYNAMIC_DISPATCH(GeluForwardF64)(e - b, x + b, y + b, dydx + b); });
}
void axpy(int64_t n, double alpha, const float* x, float* y) {
  in_parts(n, [&](int64_t b, int64_t e) { HWY_DYNAMIC_DISPATCH(AxpyF32)(e - b, alpha, x + b, y + b); });
}
void axpy(int64_t n, double alpha, const double* x, double* y) {
  in_parts(n, [&](int64_t b, int64_t e) { HWY_DYNAMIC_DISPATCH(AxpyF64)(e - b, alpha, x + b, y + b); });
}
void fill(int64_t n, float value, float* out) { HWY_DYNAMIC_DISPATCH(FillF32)(n, value, out); }
void fill(int64_t n, double value, double* out) { HWY_DYNAMIC_DISPATCH(FillF64)(n, value, out); }

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
