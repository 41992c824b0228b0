// Reduction kernels, per-target Highway bodies (included once per target by reduce.cc).

#if defined(NORMLAB_AUTOGRAD_KERNELS_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_REDUCE_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_REDUCE_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_REDUCE_INL_H_
#endif

#include <algorithm>
#include <limits>

#include "autograd/kernels/loop-inl.h"
#include "autograd/kernels/reduce.h"
#include "autograd/grain.h"
#include "base/thread_pool.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Max that lets NaN win, as torch.max does.
template <class D, class V>
HWY_INLINE V MaxNaN(D d, V a, V b) {
  return hn::IfThenElse(hn::IsNaN(a), a, hn::IfThenElse(hn::Or(hn::IsNaN(b), hn::Gt(b, a)), b, a));
}

template <typename T>
HWY_INLINE T Combine(ReduceOp op, T a, T b) {
  if (op == ReduceOp::Sum) return a + b;
  return (a != a) ? a : ((b != b || b > a) ? b : a);
}

// Sum or max of one contiguous row of r values. Four independent accumulators hide the add
// latency (and, for sums, make a shallower, more accurate tree than one running total).
template <typename T>
HWY_INLINE T ReduceRow(ReduceOp op, int64_t r, const T* x) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const T init = op == ReduceOp::Sum ? T(0) : -std::numeric_limits<T>::infinity();
  auto f = [&](auto a, auto b) { return op == ReduceOp::Sum ? hn::Add(a, b) : MaxNaN(d, a, b); };
  auto a0 = hn::Set(d, init), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 4 * N <= r; j += 4 * N) {
    a0 = f(a0, hn::LoadU(d, x + j));
    a1 = f(a1, hn::LoadU(d, x + j + N));
    a2 = f(a2, hn::LoadU(d, x + j + 2 * N));
    a3 = f(a3, hn::LoadU(d, x + j + 3 * N));
  }
  for (; j + N <= r; j += N) a0 = f(a0, hn::LoadU(d, x + j));
  a0 = f(f(a0, a1), f(a2, a3));
  if (op == ReduceOp::Sum) {  // lanes added as a tree (LaneSum, loop-inl.h)
    T acc = LaneSum(d, a0);
    for (; j < r; ++j) acc += x[j];
    return acc;
  }
  // Max: lanes in order, with Combine's NaN rule.
  HWY_ALIGN T lanes[hn::MaxLanes(d)];
  hn::Store(a0, d, lanes);
  T acc = lanes[0];
  for (int64_t l = 1; l < N; ++l) acc = Combine(op, acc, lanes[l]);
  for (; j < r; ++j) acc = Combine(op, acc, x[j]);
  return acc;
}

// out[k] = op over j < r of x[j * stride + k], k < inner: whole rows combined vector by vector.
// Each column is combined in row order from init, exactly as the scalar reference does (bitwise equal). Four
// vectors of columns at a time give four independent chains (one chain is add-latency bound:
// the bias gradient of Linear(., 256) at batch 128 ran at ~4 GB/s).
template <typename T>
HWY_INLINE void ReduceColumns(ReduceOp op, int64_t r, int64_t inner, int64_t stride, const T* x, T* out) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const T init = op == ReduceOp::Sum ? T(0) : -std::numeric_limits<T>::infinity();
  auto f = [&](auto a, auto b) { return op == ReduceOp::Sum ? hn::Add(a, b) : MaxNaN(d, a, b); };
  int64_t k = 0;
  for (; k + 4 * N <= inner; k += 4 * N) {
    auto a0 = hn::Set(d, init), a1 = a0, a2 = a0, a3 = a0;
    const T* row = x + k;
    for (int64_t j = 0; j < r; ++j, row += stride) {
      a0 = f(a0, hn::LoadU(d, row));
      a1 = f(a1, hn::LoadU(d, row + N));
      a2 = f(a2, hn::LoadU(d, row + 2 * N));
      a3 = f(a3, hn::LoadU(d, row + 3 * N));
    }
    hn::StoreU(a0, d, out + k);
    hn::StoreU(a1, d, out + k + N);
    hn::StoreU(a2, d, out + k + 2 * N);
    hn::StoreU(a3, d, out + k + 3 * N);
  }
  for (; k + N <= inner; k += N) {
    auto acc = hn::Set(d, init);
    for (int64_t j = 0; j < r; ++j) {
      const auto v = hn::LoadU(d, x + j * stride + k);
      acc = op == ReduceOp::Sum ? hn::Add(acc, v) : MaxNaN(d, acc, v);
    }
    hn::StoreU(acc, d, out + k);
  }
  for (; k < inner; ++k) {
    T acc = init;
    for (int64_t j = 0; j < r; ++j) acc = Combine(op, acc, x[j * stride + k]);
    out[k] = acc;
  }
}

// Outputs o0 .. o1-1 and, of each, columns k0 .. k1-1.
template <typename T>
HWY_INLINE void ReducePart(ReduceOp op, int64_t o0, int64_t o1, int64_t r, int64_t inner, int64_t k0, int64_t k1,
                           const T* x, T* out) {
  for (int64_t o = o0; o < o1; ++o) {
    if (inner == 1) out[o] = ReduceRow(op, r, x + o * r);
    else ReduceColumns(op, r, k1 - k0, inner, x + o * r * inner + k0, out + o * inner + k0);
  }
}

// Parts of contiguous ranges of outputs (or, with fewer outputs than parts, of 16-column blocks),
// 2 per thread, claimed on the pool (autograd/grain.h decides the threads). Each output is computed
// by the same sequence of operations whatever the range it falls in (see ReduceRow,
// ReduceColumns), so the result does not depend on the thread count.
template <typename T>
void Reduce(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const T* x, T* out) {
  const int threads = threads_for(static_cast<double>(outer) * r * inner, grains().reduce);
  if (threads <= 1) return ReducePart(op, 0, outer, r, inner, 0, inner, x, out);
  const int64_t blocks = (inner + 15) / 16;  // whole 16-column blocks (4 AVX2 float vectors)
  const bool by_outputs = outer >= 2 * threads || inner == 1;
  const int64_t parts = std::min<int64_t>(2 * threads, by_outputs ? outer : blocks);
  base::parallel_parts(threads, parts, [&](int64_t q) HWY_ATTR {
    if (by_outputs) {
      ReducePart(op, outer * q / parts, outer * (q + 1) / parts, r, inner, 0, inner, x, out);
    } else {
      const int64_t k0 = std::min(inner, blocks * q / parts * 16), k1 = std::min(inner, blocks * (q + 1) / parts * 16);
      ReducePart(op, 0, outer, r, inner, k0, k1, x, out);
    }
  });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
