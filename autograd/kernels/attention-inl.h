// Scaled dot-product attention kernels, per-target Highway bodies (included once per target by
// attention.cc). Vectors run along the head dimension D (dot products and row updates) and along a
// query row's scratch scores (max, exponentials, sum); tails go one lane at a time.

#if defined(NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/kernels/attention.h"
#include "autograd/kernels/norm_parallel.h"  // norm_threads
#include "base/thread_pool.h"
#include "hwy/aligned_allocator.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of the lanes of v in lane order (not SumOfLanes, whose order differs between targets).
template <class D>
HWY_INLINE hn::TFromD<D> SumLanesInOrder(D d, hn::Vec<D> v) {
  using T = hn::TFromD<D>;
  HWY_ALIGN T lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  T acc = lanes[0];
  for (size_t l = 1; l < hn::Lanes(d); ++l) acc += lanes[l];
  return acc;
}

// a . b over n values: whole vectors (lanes summed in order), then the tail one value at a time.
template <typename T>
HWY_INLINE T Dot(int64_t n, const T* HWY_RESTRICT a, const T* HWY_RESTRICT b) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  T acc = 0;
  if (n >= N) {
    auto va = hn::Zero(d);
    for (; i + N <= n; i += N) va = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), va);
    acc = SumLanesInOrder(d, va);
  }
  for (; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// y += alpha x over n values.
template <typename T>
HWY_INLINE void Axpy(int64_t n, T alpha, const T* HWY_RESTRICT x, T* HWY_RESTRICT y) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, alpha);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(va, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  for (; i < n; ++i) y[i] += alpha * x[i];
}

// y *= alpha over n values.
template <typename T>
HWY_INLINE void ScaleRow(int64_t n, T alpha, T* HWY_RESTRICT y) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, alpha);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(va, hn::LoadU(d, y + i)), d, y + i);
  for (; i < n; ++i) y[i] *= alpha;
}

// row[j] = e^(row[j] - m) for j < n; returns their sum (whole vectors, lanes in order, then the
// tail through one-lane vectors: the same Exp for every value).
template <typename T>
HWY_INLINE T ExpRow(int64_t n, T m, T* HWY_RESTRICT row) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  T acc = 0;
  if (n >= N) {
    const auto vm = hn::Set(d, m);
    auto vs = hn::Zero(d);
    for (; j + N <= n; j += N) {
      const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, row + j), vm));
      hn::StoreU(e, d, row + j);
      vs = hn::Add(vs, e);
    }
    acc = SumLanesInOrder(d, vs);
  }
  for (; j < n; ++j) {
    row[j] = hn::GetLane(hn::Exp(d1, hn::Set(d1, row[j] - m)));
    acc += row[j];
  }
  return acc;
}

// e^x for one value through the one-lane vector Exp (the backward's probabilities).
template <typename T>
HWY_INLINE T Exp1(T x) {
  const hn::CappedTag<T, 1> d1;
  return hn::GetLane(hn::Exp(d1, hn::Set(d1, x)));
}

// Forward of one (b, h): each query row's scores into `row` (T values), then its softmax and o_i.
template <typename T>
void AttentionForwardHead(const AttentionShape& s, int64_t b, int64_t h, const T* q, const T* k, const T* v, T* o,
                          T* lse, T* row) {
  const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(s.D)));
  const T* qh = q + b * s.q.batch + h * s.q.head;
  const T* kh = k + b * s.k.batch + h * s.k.head;
  const T* vh = v + b * s.v.batch + h * s.v.head;
  T* oh = o + b * s.o.batch + h * s.o.head;
  T* lh = lse + (b * s.H + h) * s.T;
  for (int64_t i = 0; i < s.T; ++i) {
    const int64_t n = s.causal ? i + 1 : s.T;
    const T* qi = qh + i * s.q.row;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      row[j] = Dot(s.D, qi, kh + j * s.k.row) * scale;
      m = std::max(m, row[j]);
    }
    const T l = ExpRow(n, m, row);
    T* oi = oh + i * s.o.row;
    std::fill(oi, oi + s.D, T(0));
    for (int64_t j = 0; j < n; ++j) Axpy(s.D, row[j], vh + j * s.v.row, oi);
    ScaleRow(s.D, T(1) / l, oi);
    lh[i] = m + std::log(l);
  }
}

// Backward of one (b, h): each query row i goes over its keys once, adding to dV_j and dK_j and
// summing dQ_i.
template <typename T>
void AttentionBackwardHead(const AttentionShape& s, int64_t b, int64_t h, const T* q, const T* k, const T* v,
                           const T* o, const T* dout, const T* lse, T* dq, T* dk, T* dv) {
  const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(s.D)));
  const T* qh = q + b * s.q.batch + h * s.q.head;
  const T* kh = k + b * s.k.batch + h * s.k.head;
  const T* vh = v + b * s.v.batch + h * s.v.head;
  const T* oh = o + b * s.o.batch + h * s.o.head;
  const T* gh = dout + b * s.o.batch + h * s.o.head;
  const T* lh = lse + (b * s.H + h) * s.T;
  T* dqh = dq + b * s.q.batch + h * s.q.head;
  T* dkh = dk + b * s.k.batch + h * s.k.head;
  T* dvh = dv + b * s.v.batch + h * s.v.head;
  for (int64_t j = 0; j < s.T; ++j) {
    std::fill(dkh + j * s.k.row, dkh + j * s.k.row + s.D, T(0));
    std::fill(dvh + j * s.v.row, dvh + j * s.v.row + s.D, T(0));
  }
  for (int64_t i = 0; i < s.T; ++i) {
    const int64_t n = s.causal ? i + 1 : s.T;
    const T* qi = qh + i * s.q.row;
    const T* gi = gh + i * s.o.row;
    T* dqi = dqh + i * s.q.row;
    std::fill(dqi, dqi + s.D, T(0));
    const T delta = Dot(s.D, gi, oh + i * s.o.row);
    for (int64_t j = 0; j < n; ++j) {
      const T* kj = kh + j * s.k.row;
      const T p = Exp1(Dot(s.D, qi, kj) * scale - lh[i]);
      const T ds = p * (Dot(s.D, gi, vh + j * s.v.row) - delta);
      Axpy(s.D, p, gi, dvh + j * s.v.row);
      Axpy(s.D, ds, kj, dqi);
      Axpy(s.D, ds * scale, qi, dkh + j * s.k.row);
    }
    ScaleRow(s.D, scale, dqi);
  }
}

// Threads for B H heads of about T^2 D multiply-adds each (1 when small).
inline int AttentionThreads(const AttentionShape& s) {
  return norm_threads(s.B * s.H * s.T * s.T * std::max<int64_t>(s.D, 1), s.B * s.H);
}

template <typename T>
void AttentionForward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o, T* lse) {
  const int64_t parts = s.B * s.H;
  if (parts == 0 || s.T == 0) return;
  // One scratch row of T scores per (b, h), allocated once per call.
  auto scratch = hwy::AllocateAligned<T>(static_cast<size_t>(parts * s.T));
  T* rows = scratch.get();
  base::parallel_parts(AttentionThreads(s), parts, [&](int64_t p) HWY_ATTR {
    AttentionForwardHead(s, p / s.H, p % s.H, q, k, v, o, lse, rows + p * s.T);
  });
}

template <typename T>
void AttentionBackward(const AttentionShape& s, const T* q, const T* k, const T* v, const T* o, const T* dout,
                       const T* lse, T* dq, T* dk, T* dv) {
  const int64_t parts = s.B * s.H;
  if (parts == 0 || s.T == 0) return;
  base::parallel_parts(AttentionThreads(s), parts, [&](int64_t p) HWY_ATTR {
    AttentionBackwardHead(s, p / s.H, p % s.H, q, k, v, o, dout, lse, dq, dk, dv);
  });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
