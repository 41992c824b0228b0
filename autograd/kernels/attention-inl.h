// Scaled dot-product attention kernels, per-target Highway bodies (included once per target by
// attention.cc). A query row's scores are computed along the keys, from a transposed copy of K (and
// V, for the backward's dP), so each lane is one key and sums over d in order; the row updates
// (o_i += p_j v_j, dV, dQ, dK) go along the head dimension D. Tails go one lane at a time.

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
// (Once per query row: delta_i.)
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

// y += alpha x over n values (a row of D features).
template <typename T>
HWY_INLINE void Axpy(int64_t n, T alpha, const T* HWY_RESTRICT x, T* HWY_RESTRICT y) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, alpha);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(va, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  for (; i < n; ++i) y[i] += alpha * x[i];
}

// Dot products of one row a (D values) with the rows j of a (T, D) operand, read from its transpose
// bt (D, T): s_j = scale sum_d a_d bt[d T + j], vectors along j, so every lane sums over d in order
// (d = 0 first, as the reference) and no lanes are ever added together. kV vectors of j at once
// (independent accumulators hide the multiply-add latency).
template <int kV, class DV, typename T = hn::TFromD<DV>>
HWY_INLINE void RowDotsAt(DV dv, int64_t j, int64_t D, int64_t T_, T scale, const T* HWY_RESTRICT a,
                          const T* HWY_RESTRICT bt, T* HWY_RESTRICT s) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(dv));
  hn::Vec<DV> acc[kV];
  for (int v = 0; v < kV; ++v) acc[v] = hn::Zero(dv);
  for (int64_t d = 0; d < D; ++d) {
    const auto ad = hn::Set(dv, a[d]);
    const T* row = bt + d * T_ + j;
    for (int v = 0; v < kV; ++v) acc[v] = hn::MulAdd(ad, hn::LoadU(dv, row + v * N), acc[v]);
  }
  const auto vs = hn::Set(dv, scale);
  for (int v = 0; v < kV; ++v) hn::StoreU(hn::Mul(acc[v], vs), dv, s + j + v * N);
}

// s_j for j < n: blocks of 4 vectors, of 2, then single vectors, then one-lane vectors (the same
// operations on every j).
template <typename T>
HWY_INLINE void RowDots(int64_t n, int64_t D, int64_t T_, T scale, const T* HWY_RESTRICT a, const T* HWY_RESTRICT bt,
                        T* HWY_RESTRICT s) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  for (; j + 4 * N <= n; j += 4 * N) RowDotsAt<4>(d, j, D, T_, scale, a, bt, s);
  for (; j + 2 * N <= n; j += 2 * N) RowDotsAt<2>(d, j, D, T_, scale, a, bt, s);
  for (; j + N <= n; j += N) RowDotsAt<1>(d, j, D, T_, scale, a, bt, s);
  for (; j < n; ++j) RowDotsAt<1>(d1, j, D, T_, scale, a, bt, s);
}

// out[d] = scale sum_j w_j x[j row + d] for d < D, j < n in order: kV vectors of d at once, each
// summed in a register over j (accumulating in out instead would chain every j through a store and
// a load). Blocks of 4, 2, 1 vectors, then one-lane vectors.
template <int kV, class DV, typename T = hn::TFromD<DV>>
HWY_INLINE void WeightedSumAt(DV dv, int64_t d0, int64_t n, const T* HWY_RESTRICT w, const T* HWY_RESTRICT x,
                              int64_t row, T scale, T* HWY_RESTRICT out) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(dv));
  hn::Vec<DV> acc[kV];
  for (int v = 0; v < kV; ++v) acc[v] = hn::Zero(dv);
  for (int64_t j = 0; j < n; ++j) {
    const auto wj = hn::Set(dv, w[j]);
    const T* xj = x + j * row + d0;
    for (int v = 0; v < kV; ++v) acc[v] = hn::MulAdd(wj, hn::LoadU(dv, xj + v * N), acc[v]);
  }
  const auto vs = hn::Set(dv, scale);
  for (int v = 0; v < kV; ++v) hn::StoreU(hn::Mul(acc[v], vs), dv, out + d0 + v * N);
}

template <typename T>
HWY_INLINE void WeightedSum(int64_t n, int64_t D, const T* HWY_RESTRICT w, const T* HWY_RESTRICT x, int64_t row,
                            T scale, T* HWY_RESTRICT out) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t d0 = 0;
  for (; d0 + 4 * N <= D; d0 += 4 * N) WeightedSumAt<4>(d, d0, n, w, x, row, scale, out);
  for (; d0 + 2 * N <= D; d0 += 2 * N) WeightedSumAt<2>(d, d0, n, w, x, row, scale, out);
  for (; d0 + N <= D; d0 += N) WeightedSumAt<1>(d, d0, n, w, x, row, scale, out);
  for (; d0 < D; ++d0) WeightedSumAt<1>(d1, d0, n, w, x, row, scale, out);
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

// The backward's probabilities and score gradients of one query row, for j < n:
//   p_j = e^(s_j - lse),  ds_j = p_j (dp_j - delta)   (s becomes p, dp becomes ds).
template <class DV, typename T = hn::TFromD<DV>>
HWY_INLINE void ProbsAt(DV dv, int64_t j, T lse, T delta, T* HWY_RESTRICT s, T* HWY_RESTRICT dp) {
  const auto p = hn::Exp(dv, hn::Sub(hn::LoadU(dv, s + j), hn::Set(dv, lse)));
  hn::StoreU(p, dv, s + j);
  hn::StoreU(hn::Mul(p, hn::Sub(hn::LoadU(dv, dp + j), hn::Set(dv, delta))), dv, dp + j);
}

template <typename T>
HWY_INLINE void Probs(int64_t n, T lse, T delta, T* HWY_RESTRICT s, T* HWY_RESTRICT dp) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  for (; j + N <= n; j += N) ProbsAt(d, j, lse, delta, s, dp);
  for (; j < n; ++j) ProbsAt(d1, j, lse, delta, s, dp);
}

// bt (D, T) = the transpose of the T rows of D values at b (row stride `row`).
template <typename T>
HWY_INLINE void Transpose(int64_t T_, int64_t D, const T* HWY_RESTRICT b, int64_t row, T* HWY_RESTRICT bt) {
  for (int64_t j = 0; j < T_; ++j)
    for (int64_t d = 0; d < D; ++d) bt[d * T_ + j] = b[j * row + d];
}

// Forward of one (b, h), with scratch for K^T (D, T) and one row of T scores: each query row's
// scores, then its softmax and o_i.
template <typename T>
void AttentionForwardHead(const AttentionShape& s, int64_t b, int64_t h, const T* q, const T* k, const T* v, T* o,
                          T* lse, T* kt, T* row) {
  const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(s.D)));
  const T* qh = q + b * s.q.batch + h * s.q.head;
  const T* vh = v + b * s.v.batch + h * s.v.head;
  T* oh = o + b * s.o.batch + h * s.o.head;
  T* lh = lse + (b * s.H + h) * s.T;
  Transpose(s.T, s.D, k + b * s.k.batch + h * s.k.head, s.k.row, kt);
  for (int64_t i = 0; i < s.T; ++i) {
    const int64_t n = s.causal ? i + 1 : s.T;
    RowDots(n, s.D, s.T, scale, qh + i * s.q.row, kt, row);
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < n; ++j) m = std::max(m, row[j]);
    const T l = ExpRow(n, m, row);
    WeightedSum(n, s.D, row, vh, s.v.row, T(1) / l, oh + i * s.o.row);  // o_i = sum_j e_j v_j / l
    lh[i] = m + std::log(l);
  }
}

// Backward of one (b, h), with scratch for K^T and V^T (D, T each) and two rows of T values: for
// each query row i, its probabilities and score gradients over its keys, then dV_j += P_ij dO_i,
// dQ_i += dS_ij K_j, dK_j += s dS_ij Q_i in key order.
template <typename T>
void AttentionBackwardHead(const AttentionShape& s, int64_t b, int64_t h, const T* q, const T* k, const T* v,
                           const T* o, const T* dout, const T* lse, T* dq, T* dk, T* dv, T* kt, T* vt, T* p,
                           T* ds) {
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
  Transpose(s.T, s.D, kh, s.k.row, kt);
  Transpose(s.T, s.D, vh, s.v.row, vt);
  for (int64_t j = 0; j < s.T; ++j) {
    std::fill(dkh + j * s.k.row, dkh + j * s.k.row + s.D, T(0));
    std::fill(dvh + j * s.v.row, dvh + j * s.v.row + s.D, T(0));
  }
  for (int64_t i = 0; i < s.T; ++i) {
    const int64_t n = s.causal ? i + 1 : s.T;
    const T* qi = qh + i * s.q.row;
    const T* gi = gh + i * s.o.row;
    const T delta = Dot(s.D, gi, oh + i * s.o.row);
    RowDots(n, s.D, s.T, scale, qi, kt, p);  // scores
    RowDots(n, s.D, s.T, T(1), gi, vt, ds);  // dP_ij = dO_i . v_j
    Probs(n, lh[i], delta, p, ds);
    for (int64_t j = 0; j < n; ++j) {
      Axpy(s.D, p[j], gi, dvh + j * s.v.row);
      Axpy(s.D, ds[j] * scale, qi, dkh + j * s.k.row);
    }
    WeightedSum(n, s.D, ds, kh, s.k.row, scale, dqh + i * s.q.row);  // dQ_i = s sum_j dS_ij k_j
  }
}

// Threads for B H heads of about T^2 D multiply-adds each (1 when small).
inline int AttentionThreads(const AttentionShape& s) {
  return norm_threads(s.B * s.H * s.T * s.T * std::max<int64_t>(s.D, 1), s.B * s.H);
}

// Each (b, h) allocates its scratch once (a few rows of T D values), outside the loops over rows.
template <typename T>
void AttentionForward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o, T* lse) {
  const int64_t parts = s.B * s.H;
  if (parts == 0 || s.T == 0) return;
  base::parallel_parts(AttentionThreads(s), parts, [&](int64_t p) HWY_ATTR {
    auto scratch = hwy::AllocateAligned<T>(static_cast<size_t>((s.D + 1) * s.T));
    AttentionForwardHead(s, p / s.H, p % s.H, q, k, v, o, lse, scratch.get(), scratch.get() + s.D * s.T);
  });
}

template <typename T>
void AttentionBackward(const AttentionShape& s, const T* q, const T* k, const T* v, const T* o, const T* dout,
                       const T* lse, T* dq, T* dk, T* dv) {
  const int64_t parts = s.B * s.H;
  if (parts == 0 || s.T == 0) return;
  base::parallel_parts(AttentionThreads(s), parts, [&](int64_t p) HWY_ATTR {
    auto scratch = hwy::AllocateAligned<T>(static_cast<size_t>((2 * s.D + 2) * s.T));
    T* kt = scratch.get();
    T* vt = kt + s.D * s.T;
    T* pr = vt + s.D * s.T;
    AttentionBackwardHead(s, p / s.H, p % s.H, q, k, v, o, dout, lse, dq, dk, dv, kt, vt, pr, pr + s.T);
  });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
