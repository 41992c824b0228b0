// Scaled dot-product attention kernels, per-target Highway bodies (included once per target by
// attention.cc). Register tiles of kRows query (or key) rows: scores are a (rows, keys) product read
// from a transposed, zero-padded copy of K (and V, for the backward's dP), so each lane is one key
// and sums over d in order; the weighted sums (o_i, dQ, dK, dV) go along the head dimension of the
// operands' rows, read and written in place when D is a multiple of the lane count, else through
// zero-padded copies, so every load is a whole vector and no lanes are added together there.

#if defined(NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "autograd/kernels/attention.h"
#include "autograd/kernels/exp-inl.h"  // ExpBounded
#include "autograd/kernels/loop-inl.h"  // ForRow
#include "autograd/kernels/norm_parallel.h"  // grain_threads
#include "autograd/kernels/transpose-inl.h"  // TransposeSquare
#include "base/thread_pool.h"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows of one register tile: kRows rows x 2 vectors = 8 accumulators (16 registers on AVX2).
constexpr int kRows = 4;

// The loops over a tile's rows and vectors are unrolled so that its accumulators stay in registers
// (GCC otherwise keeps arrays of vectors in memory).
#define NORMLAB_UNROLL_TILE _Pragma("GCC unroll 16")

// Sum of the lanes of v: Highway's reduction tree (the same on every call of one target; a chain
// of adds in lane order would wait on each add's latency, once per query row).
template <class D>
HWY_INLINE hn::TFromD<D> SumLanes(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// a . b over n values: whole vectors (their lanes summed), then the tail one value at a time.
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
    acc = SumLanes(d, va);
  }
  for (; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// Padded widths: keys and head features are stored in whole vectors.
template <typename T>
HWY_INLINE int64_t RoundUpToLanes(int64_t n) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<T>()));
  return (n + N - 1) / N * N;
}

// bt (D, ld) = the transpose of the T rows of D values at b (row stride `row`), columns T..ld zero.
// Whole L x L blocks through registers (transpose-inl.h: 8 x 8 floats or 4 x 4 doubles on AVX2 and
// AVX-512), the rows and columns left over one value at a time.
template <typename T>
HWY_INLINE void TransposePadded(int64_t T_, int64_t D, const T* HWY_RESTRICT b, int64_t row, int64_t ld,
                                T* HWY_RESTRICT bt) {
  for (int64_t d = 0; d < D; ++d) std::fill(bt + d * ld + T_, bt + (d + 1) * ld, T(0));
  int64_t Tv = 0, Dv = 0;  // rows [0, Tv) x columns [0, Dv) done in blocks
#if HWY_TARGET != HWY_SCALAR
  using DT = TransposeD<hn::ScalableTag<T>>;
  if constexpr (kCanTranspose<DT>) {
    const DT dt;
    constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(DT()));
    Tv = T_ / L * L, Dv = D / L * L;
    for (int64_t j = 0; j < Tv; j += L)
      for (int64_t d = 0; d < Dv; d += L) {
        hn::Vec<DT> r[L];
        for (int64_t i = 0; i < L; ++i) r[i] = hn::LoadU(dt, b + (j + i) * row + d);
        TransposeSquare(dt, r);
        for (int64_t q = 0; q < L; ++q) hn::StoreU(r[q], dt, bt + (d + q) * ld + j);
      }
  }
#endif
  for (int64_t j = 0; j < T_; ++j)
    for (int64_t d = j < Tv ? Dv : 0; d < D; ++d) bt[d * ld + j] = b[j * row + d];
}

// Asks for the T rows of D values at x (row stride `row`) to be brought into cache.
template <typename T>
HWY_INLINE void PrefetchRows(int64_t T_, int64_t D, const T* x, int64_t row) {
  constexpr int64_t kLine = 64 / sizeof(T);
  for (int64_t j = 0; j < T_; ++j)
    for (int64_t e = 0; e < D; e += kLine) hwy::Prefetch(x + j * row + e);
}

// A (T, D) operand as rows of whole vectors: p[j ld + e] for e < Dp.
template <typename T>
struct RowsView {
  T* p;
  int64_t ld;
};

// The T rows of D values at x (row stride `row`) as whole vectors: x itself when `direct` (D is a
// multiple of the lane count), else copied to xp (T, Dp) with zeros after each row's D values.
template <typename T>
HWY_INLINE RowsView<const T> VectorRows(bool direct, int64_t T_, int64_t D, int64_t Dp, const T* HWY_RESTRICT x,
                                        int64_t row, T* HWY_RESTRICT xp) {
  if (direct) return {x, row};
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t j = 0; j < T_; ++j) {
    const T* HWY_RESTRICT src = x + j * row;
    T* HWY_RESTRICT dst = xp + j * Dp;
    int64_t e = 0;
    for (; e + N <= D; e += N) hn::Store(hn::LoadU(d, src + e), d, dst + e);
    for (; e < D; ++e) dst[e] = src[e];
    std::fill(dst + D, dst + Dp, T(0));
  }
  return {xp, Dp};
}

// ---- The two register tiles ----------------------------------------------------------------------
// Scores: c[r][j] = scale sum_d a[r ar + d] bt[d ld + j] for r < R and kV vectors of keys from j:
// one load of each key vector serves R rows (d = 0 first, as the reference).
template <int R, int kV, class DV, typename T = hn::TFromD<DV>>
HWY_INLINE void ScoresTile(DV dv, int64_t D, const T* HWY_RESTRICT a, int64_t ar, const T* HWY_RESTRICT bt,
                           int64_t ld, int64_t j, T scale, T* HWY_RESTRICT c, int64_t lc) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(dv));
  hn::Vec<DV> acc[R][kV];
  NORMLAB_UNROLL_TILE
  for (int r = 0; r < R; ++r) {
    NORMLAB_UNROLL_TILE
    for (int v = 0; v < kV; ++v) acc[r][v] = hn::Zero(dv);
  }
  for (int64_t d = 0; d < D; ++d) {
    hn::Vec<DV> b[kV];
    NORMLAB_UNROLL_TILE
    for (int v = 0; v < kV; ++v) b[v] = hn::LoadU(dv, bt + d * ld + j + v * N);
    NORMLAB_UNROLL_TILE
    for (int r = 0; r < R; ++r) {
      const auto ar_d = hn::Set(dv, a[r * ar + d]);
      NORMLAB_UNROLL_TILE
      for (int v = 0; v < kV; ++v) acc[r][v] = hn::MulAdd(ar_d, b[v], acc[r][v]);
    }
  }
  const auto vs = hn::Set(dv, scale);
  NORMLAB_UNROLL_TILE
  for (int r = 0; r < R; ++r) {
    NORMLAB_UNROLL_TILE
    for (int v = 0; v < kV; ++v) hn::StoreU(hn::Mul(acc[r][v], vs), dv, c + r * lc + j + v * N);
  }
}

// Scores of R rows against the keys [0, n), n a multiple of the lane count.
template <int R, typename T>
HWY_INLINE void Scores(int64_t D, const T* a, int64_t ar, const T* bt, int64_t ld, int64_t n, T scale, T* c,
                       int64_t lc) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) ScoresTile<R, 2>(d, D, a, ar, bt, ld, j, scale, c, lc);
  for (; j < n; j += N) ScoresTile<R, 1>(d, D, a, ar, bt, ld, j, scale, c, lc);
}

// What a weighted-sum tile does with its sums: start from c's values (`add`), and multiply row r
// by scales[r] when it stores (scales may be null: no multiply).
template <typename T>
struct WsumMode {
  bool add;
  const T* scales;
};

// Weighted sums: c[r][e] = scales[r] ((c[r][e] if add) + sum_{j in [j0, j1)} w[r wr + j wj] x[j lx + e])
// for r < R and kV vectors of features from e, j in order.
template <int R, int kV, class DV, typename T = hn::TFromD<DV>>
HWY_INLINE void WsumTile(DV dv, int64_t j0, int64_t j1, const T* HWY_RESTRICT w, int64_t wr, int64_t wj,
                         const T* HWY_RESTRICT x, int64_t lx, int64_t e, WsumMode<T> mode, T* HWY_RESTRICT c,
                         int64_t lc) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(dv));
  hn::Vec<DV> acc[R][kV];
  NORMLAB_UNROLL_TILE
  for (int r = 0; r < R; ++r) {
    NORMLAB_UNROLL_TILE
    for (int v = 0; v < kV; ++v) acc[r][v] = mode.add ? hn::LoadU(dv, c + r * lc + e + v * N) : hn::Zero(dv);
  }
  for (int64_t j = j0; j < j1; ++j) {
    hn::Vec<DV> xv[kV];
    NORMLAB_UNROLL_TILE
    for (int v = 0; v < kV; ++v) xv[v] = hn::LoadU(dv, x + j * lx + e + v * N);
    NORMLAB_UNROLL_TILE
    for (int r = 0; r < R; ++r) {
      const auto wv = hn::Set(dv, w[r * wr + j * wj]);
      NORMLAB_UNROLL_TILE
      for (int v = 0; v < kV; ++v) acc[r][v] = hn::MulAdd(wv, xv[v], acc[r][v]);
    }
  }
  NORMLAB_UNROLL_TILE
  for (int r = 0; r < R; ++r) {
    const auto vs = hn::Set(dv, mode.scales ? mode.scales[r] : T(1));
    NORMLAB_UNROLL_TILE
    for (int v = 0; v < kV; ++v)
      hn::StoreU(mode.scales ? hn::Mul(acc[r][v], vs) : acc[r][v], dv, c + r * lc + e + v * N);
  }
}

// Weighted sums of R rows over all E features (a multiple of the lane count).
template <int R, typename T>
HWY_INLINE void Wsum(int64_t j0, int64_t j1, const T* w, int64_t wr, int64_t wj, const T* x, int64_t lx, int64_t E,
                     WsumMode<T> mode, T* c, int64_t lc) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t e = 0;
  for (; e + 2 * N <= E; e += 2 * N) WsumTile<R, 2>(d, j0, j1, w, wr, wj, x, lx, e, mode, c, lc);
  for (; e < E; e += N) WsumTile<R, 1>(d, j0, j1, w, wr, wj, x, lx, e, mode, c, lc);
}

// The tiles for `rows` <= R rows (the last block of a length that is not a multiple of R).
template <int R, typename T>
HWY_INLINE void ScoresRows(int64_t rows, int64_t D, const T* a, int64_t ar, const T* bt, int64_t ld, int64_t n,
                           T scale, T* c, int64_t lc) {
  if (rows == R) return Scores<R>(D, a, ar, bt, ld, n, scale, c, lc);
  if constexpr (R > 1) ScoresRows<R - 1>(rows, D, a, ar, bt, ld, n, scale, c, lc);
}

template <int R, typename T>
HWY_INLINE void WsumRows(int64_t rows, int64_t j0, int64_t j1, const T* w, int64_t wr, int64_t wj, const T* x,
                         int64_t lx, int64_t E, WsumMode<T> mode, T* c, int64_t lc) {
  if (rows == R) return Wsum<R>(j0, j1, w, wr, wj, x, lx, E, mode, c, lc);
  if constexpr (R > 1) WsumRows<R - 1>(rows, j0, j1, w, wr, wj, x, lx, E, mode, c, lc);
}

// ---- Softmax rows --------------------------------------------------------------------------------
// Lanes of the vector at j that hold one of the first n values (none when j >= n).
template <class DV>
HWY_INLINE hn::Mask<DV> Before(DV dv, int64_t n, int64_t j) {
  return hn::FirstN(dv, static_cast<size_t>(std::max<int64_t>(0, n - j)));
}

// The softmax numerators of one row of scores, over whole vectors up to np: e_j = e^(s_j - m) for
// j < n and 0 for n <= j < np (masked and padded keys); sets m = max_{j<n} s_j and l = sum_j e_j
// (the vector's lanes summed).
template <typename T>
HWY_INLINE void SoftmaxRow(int64_t n, int64_t np, T* HWY_RESTRICT row, T& m, T& l) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto lowest = hn::Set(d, -std::numeric_limits<T>::infinity());
  auto vmax = lowest;
  for (int64_t j = 0; j < np; j += N) {
    const auto x = hn::LoadU(d, row + j);
    vmax = hn::Max(vmax, j + N > n ? hn::IfThenElse(Before(d, n, j), x, lowest) : x);
  }
  m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  const auto vm = hn::Set(d, m);
  auto vs = hn::Zero(d);
  for (int64_t j = 0; j < np; j += N) {
    auto e = ExpBounded(d, hn::Sub(hn::LoadU(d, row + j), vm));
    if (j + N > n) e = hn::IfThenElseZero(Before(d, n, j), e);
    hn::StoreU(e, d, row + j);
    vs = hn::Add(vs, e);
  }
  l = SumLanes(d, vs);
}

// The backward's probabilities and score gradients of one query row, over whole vectors up to np:
//   p_j = e^(s_j - lse),  ds_j = p_j (dp_j - delta)   for j < n, both 0 for n <= j < np
// (s becomes p, dp becomes ds).
template <typename T>
HWY_INLINE void ProbsRow(int64_t n, int64_t np, T lse, T delta, T* HWY_RESTRICT s, T* HWY_RESTRICT dp) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vlse = hn::Set(d, lse), vdelta = hn::Set(d, delta);
  for (int64_t j = 0; j < np; j += N) {
    auto p = ExpBounded(d, hn::Sub(hn::LoadU(d, s + j), vlse));
    auto g = hn::Mul(p, hn::Sub(hn::LoadU(d, dp + j), vdelta));
    if (j + N > n) {
      const auto keep = Before(d, n, j);
      p = hn::IfThenElseZero(keep, p);
      g = hn::IfThenElseZero(keep, g);
    }
    hn::StoreU(p, d, s + j);
    hn::StoreU(g, d, dp + j);
  }
}

// The same from P read back (p holds p_j for j < n and 0 for n <= j < np): ds_j = p_j (dp_j - delta)
// (dp becomes ds), 0 for n <= j < np.
template <typename T>
HWY_INLINE void GradsRow(int64_t n, int64_t np, T delta, const T* HWY_RESTRICT p, T* HWY_RESTRICT dp) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vdelta = hn::Set(d, delta);
  for (int64_t j = 0; j < np; j += N) {
    auto g = hn::Mul(hn::LoadU(d, p + j), hn::Sub(hn::LoadU(d, dp + j), vdelta));
    if (j + N > n) g = hn::IfThenElseZero(Before(d, n, j), g);
    hn::StoreU(g, d, dp + j);
  }
}

// rows rows of D values from c (row stride lc) to out (row stride row): the padded path's results.
template <typename T>
HWY_INLINE void CopyOut(int64_t rows, int64_t D, const T* HWY_RESTRICT c, int64_t lc, T* HWY_RESTRICT out,
                        int64_t row) {
  for (int64_t r = 0; r < rows; ++r) std::copy(c + r * lc, c + r * lc + D, out + r * row);
}

// ---- Forward -------------------------------------------------------------------------------------
// Scratch of one (b, h): K^T (D, Tp), V padded (T, Dp), kRows rows of Tp scores, kRows rows of Dp
// outputs, the rows' maxima m (Tp). Tp and Dp: T and D rounded up to whole vectors; when D is a
// multiple of the lane count (`direct`), V and o are read and written in place and their scratch
// is unused.
template <typename T>
struct ForwardScratch {
  int64_t Tp, Dp;
  bool direct;
  hwy::AlignedFreeUniquePtr<T[]> mem;
  T *kt, *vp, *sc, *out, *m;
  explicit ForwardScratch(const AttentionShape& s)
      : Tp(RoundUpToLanes<T>(s.T)), Dp(RoundUpToLanes<T>(s.D)), direct(Dp == s.D),
        mem(hwy::AllocateAligned<T>(static_cast<size_t>(s.D * Tp + s.T * Dp + kRows * (Tp + Dp) + Tp))) {
    kt = mem.get();
    vp = kt + s.D * Tp;
    sc = vp + s.T * Dp;
    out = sc + kRows * Tp;
    m = out + kRows * Dp;
  }
};

// Rows [i0, i0 + rows) of one (b, h): their scores against the keys they see, the softmax of each
// row (masked keys get probability 0), o_i = sum_j e_ij v_j / l_i; m_i goes to w.m and l_i to lh
// (AttentionForwardHead makes lse_i = m_i + log l_i of every row at once).
template <typename T>
void ForwardRows(const AttentionShape& s, int64_t i0, int64_t rows, const T* qh, RowsView<const T> vx, T* oh,
                 T* lh, T* ph, ForwardScratch<T>& w) {
  const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(s.D)));
  const int64_t nj = s.causal ? std::min(s.T, i0 + rows) : s.T;  // keys any of these rows sees
  const int64_t njp = RoundUpToLanes<T>(nj);
  ScoresRows<kRows>(rows, s.D, qh + i0 * s.q.row, s.q.row, w.kt, w.Tp, njp, scale, w.sc, w.Tp);
  T inv_l[kRows];
  for (int64_t r = 0; r < rows; ++r) {
    T m, l;
    SoftmaxRow(s.causal ? i0 + r + 1 : s.T, njp, w.sc + r * w.Tp, m, l);
    inv_l[r] = T(1) / l;
    w.m[i0 + r] = m;
    lh[i0 + r] = l;
    if (ph) {  // P's row: e_j / l for the njp keys the block computed, as far as the row goes
      const T* e = w.sc + r * w.Tp;
      T* pr = ph + (i0 + r) * s.T;
      const T il = inv_l[r];
      ForRow<T>(std::min(njp, s.T), [&](auto d, int64_t j) HWY_ATTR {
        hn::StoreU(hn::Mul(hn::LoadU(d, e + j), hn::Set(d, il)), d, pr + j);
      });
    }
  }
  T* oi = oh + i0 * s.o.row;
  WsumRows<kRows>(rows, 0, nj, w.sc, w.Tp, 1, vx.p, vx.ld, w.Dp, WsumMode<T>{false, inv_l}, w.direct ? oi : w.out,
                  w.direct ? s.o.row : w.Dp);
  if (!w.direct) CopyOut(rows, s.D, w.out, w.Dp, oi, s.o.row);
}

template <typename T>
void AttentionForwardHead(const AttentionShape& s, int64_t b, int64_t h, const T* q, const T* k, const T* v, T* o,
                          T* lse, T* p, ForwardScratch<T>& w) {
  TransposePadded(s.T, s.D, k + b * s.k.batch + h * s.k.head, s.k.row, w.Tp, w.kt);
  const auto vx = VectorRows(w.direct, s.T, s.D, w.Dp, v + b * s.v.batch + h * s.v.head, s.v.row, w.vp);
  const T* qh = q + b * s.q.batch + h * s.q.head;
  T* oh = o + b * s.o.batch + h * s.o.head;
  T* lh = lse + (b * s.H + h) * s.T;
  T* ph = p ? p + (b * s.H + h) * s.T * s.T : nullptr;
  for (int64_t i0 = 0; i0 < s.T; i0 += kRows)
    ForwardRows(s, i0, std::min<int64_t>(kRows, s.T - i0), qh, vx, oh, lh, ph, w);
  // lse = m + log l over the rows, whole vectors and then one lane at a time (l >= 1: the row's
  // largest term is e^0).
  ForRow<T>(s.T, [&](auto d, int64_t i) HWY_ATTR {
    hn::StoreU(hn::Add(hn::LoadU(d, w.m + i), hn::Log(d, hn::LoadU(d, lh + i))), d, lh + i);
  });
}

// ---- Backward ------------------------------------------------------------------------------------
// Query rows per chunk of the backward, a multiple of kRows unless it is the whole length: P and dS
// of a chunk take about 256 KB together at most, so a long sequence needs no (T, T) matrices.
template <typename T>
HWY_INLINE int64_t ChunkRows(int64_t T_, int64_t Tp) {
  const int64_t fit = static_cast<int64_t>(256 * 1024 / sizeof(T)) / (2 * Tp);
  return std::min(T_, std::max<int64_t>(kRows, fit / kRows * kRows));
}

// Scratch of one (b, h): K^T and V^T (D, Tp); K, Q and dO padded (T, Dp) and the dK and dV sums
// (T, Dp), all unused when `direct` (D a multiple of the lane count: in place); P and dS of a chunk
// of query rows (Bq, Tp) each; kRows rows of Dp outputs; delta (T).
template <typename T>
struct BackwardScratch {
  int64_t Tp, Dp, Bq;
  bool direct;
  hwy::AlignedFreeUniquePtr<T[]> mem;
  T *kt, *vt, *kp, *vp, *qp, *gp, *dkp, *dvp, *p, *ds, *out, *delta;
  explicit BackwardScratch(const AttentionShape& s)
      : Tp(RoundUpToLanes<T>(s.T)), Dp(RoundUpToLanes<T>(s.D)), Bq(ChunkRows<T>(s.T, Tp)), direct(Dp == s.D),
        mem(hwy::AllocateAligned<T>(
            static_cast<size_t>(2 * s.D * Tp + 6 * s.T * Dp + 2 * Bq * Tp + kRows * Dp + s.T))) {
    kt = mem.get();
    vt = kt + s.D * Tp;
    kp = vt + s.D * Tp;
    vp = kp + s.T * Dp;
    qp = vp + s.T * Dp;
    gp = qp + s.T * Dp;
    dkp = gp + s.T * Dp;
    dvp = dkp + s.T * Dp;
    p = dvp + s.T * Dp;
    ds = p + Bq * Tp;
    out = ds + Bq * Tp;
    delta = out + kRows * Dp;
  }
};

// Operands of one (b, h) of the backward: q and dO rows for the scores (strides s.q.row, s.o.row),
// K, Q and dO as whole-vector rows, the dK and dV sums, dQ's rows (stride s.q.row), lse (T).
template <typename T>
struct BackwardHead {
  const T *q, *g, *lse;
  const T* p;  // the forward's P of this (b, h) (T, T), or null: computed again
  RowsView<const T> kx, qx, gx;
  RowsView<T> dk, dv;
  T* dq;
  T scale;
};

// Query rows [i0, i0 + rows) of a chunk starting at c0: their probabilities and score gradients
// over the keys they see (zero for the masked ones), and dQ_i = s sum_j dS_ij k_j.
template <typename T>
void BackwardRows(const AttentionShape& s, const BackwardHead<T>& a, int64_t c0, int64_t i0, int64_t rows,
                  BackwardScratch<T>& w) {
  const int64_t nj = s.causal ? std::min(s.T, i0 + rows) : s.T;
  const int64_t njp = RoundUpToLanes<T>(nj);
  T* p = w.p + (i0 - c0) * w.Tp;
  T* ds = w.ds + (i0 - c0) * w.Tp;
  ScoresRows<kRows>(rows, s.D, a.g + i0 * s.o.row, s.o.row, w.vt, w.Tp, njp, T(1), ds, w.Tp);  // dP = dO V^T
  if (a.p) {  // P's rows from the forward, zero past the row's end
    const int64_t have = std::min(njp, s.T);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      std::copy(a.p + i * s.T, a.p + i * s.T + have, p + r * w.Tp);
      std::fill(p + r * w.Tp + have, p + r * w.Tp + njp, T(0));
      GradsRow(s.causal ? i + 1 : s.T, njp, w.delta[i], p + r * w.Tp, ds + r * w.Tp);
    }
  } else {
    ScoresRows<kRows>(rows, s.D, a.q + i0 * s.q.row, s.q.row, w.kt, w.Tp, njp, a.scale, p, w.Tp);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      ProbsRow(s.causal ? i + 1 : s.T, njp, a.lse[i], w.delta[i], p + r * w.Tp, ds + r * w.Tp);
    }
  }
  const T scales[kRows] = {a.scale, a.scale, a.scale, a.scale};
  static_assert(kRows == 4, "one scale per row of a tile");
  T* dqi = a.dq + i0 * s.q.row;
  WsumRows<kRows>(rows, 0, nj, ds, w.Tp, 1, a.kx.p, a.kx.ld, w.Dp, WsumMode<T>{false, scales},
                  w.direct ? dqi : w.out, w.direct ? s.q.row : w.Dp);
  if (!w.direct) CopyOut(rows, s.D, w.out, w.Dp, dqi, s.q.row);
}

// One chunk of query rows [c0, c1): its rows, then what they add to every key's sums
//   dV_j += sum_i P_ij dO_i,  dK_j += sum_i dS_ij q_i   (i in order; causal: only i >= j),
// dK multiplied by s when the last chunk stores it.
// Key blocks start at multiples of kRows, as chunks and row blocks do, so the columns a causal key
// block reads from a row i >= j0 lie within the columns that row's block computed.
template <typename T>
void BackwardChunk(const AttentionShape& s, const BackwardHead<T>& a, int64_t c0, int64_t c1,
                   BackwardScratch<T>& w) {
  for (int64_t i0 = c0; i0 < c1; i0 += kRows) BackwardRows(s, a, c0, i0, std::min<int64_t>(kRows, c1 - i0), w);
  const int64_t keys = s.causal ? c1 : s.T;
  // One chunk of all the rows (every short sequence) stores the sums where the others add them to
  // the zeros StartSums wrote (the same bits: each sum starts from 0 either way).
  const bool only = c0 == 0 && c1 == s.T;
  const WsumMode<T> add{!only, nullptr};
  const T scales[kRows] = {a.scale, a.scale, a.scale, a.scale};
  const WsumMode<T> add_k{!only, c1 == s.T ? scales : nullptr};  // the last chunk's sums are dK
  for (int64_t j0 = 0; j0 < keys; j0 += kRows) {
    const int64_t rows = std::min<int64_t>(kRows, s.T - j0);
    const int64_t i_begin = s.causal ? std::max(c0, j0) : c0;
    WsumRows<kRows>(rows, i_begin - c0, c1 - c0, w.p + j0, 1, w.Tp, a.gx.p + c0 * a.gx.ld, a.gx.ld, w.Dp, add,
                    a.dv.p + j0 * a.dv.ld, a.dv.ld);
    WsumRows<kRows>(rows, i_begin - c0, c1 - c0, w.ds + j0, 1, w.Tp, a.qx.p + c0 * a.qx.ld, a.qx.ld, w.Dp, add_k,
                    a.dk.p + j0 * a.dk.ld, a.dk.ld);
  }
}

// The dK and dV sums of one (b, h) start at 0 (in place when direct, else in scratch).
template <typename T>
HWY_INLINE void StartSums(const AttentionShape& s, const BackwardHead<T>& a, int64_t Dp) {
  for (int64_t j = 0; j < s.T; ++j) {
    std::fill(a.dk.p + j * a.dk.ld, a.dk.p + j * a.dk.ld + Dp, T(0));
    std::fill(a.dv.p + j * a.dv.ld, a.dv.p + j * a.dv.ld + Dp, T(0));
  }
}

// The padded path: dK and dV from the scratch sums into the outputs' rows.
template <typename T>
HWY_INLINE void CopySums(const AttentionShape& s, const BackwardHead<T>& a, T* dkh, T* dvh) {
  CopyOut(s.T, s.D, a.dk.p, a.dk.ld, dkh, s.k.row);
  CopyOut(s.T, s.D, a.dv.p, a.dv.ld, dvh, s.v.row);
}

template <typename T>
void AttentionBackwardHead(const AttentionShape& s, int64_t b, int64_t h, const T* q, const T* k, const T* v,
                           const T* o, const T* dout, const T* lse, T* dq, T* dk, T* dv, const T* p,
                           BackwardScratch<T>& w) {
  const T* qh = q + b * s.q.batch + h * s.q.head;
  const T* kh = k + b * s.k.batch + h * s.k.head;
  const T* oh = o + b * s.o.batch + h * s.o.head;
  const T* gh = dout + b * s.o.batch + h * s.o.head;
  T* dkh = dk + b * s.k.batch + h * s.k.head;
  T* dvh = dv + b * s.v.batch + h * s.v.head;
  const BackwardHead<T> a{qh,
                          gh,
                          lse + (b * s.H + h) * s.T,
                          p ? p + (b * s.H + h) * s.T * s.T : nullptr,
                          VectorRows(w.direct, s.T, s.D, w.Dp, kh, s.k.row, w.kp),
                          VectorRows(w.direct, s.T, s.D, w.Dp, qh, s.q.row, w.qp),
                          VectorRows(w.direct, s.T, s.D, w.Dp, gh, s.o.row, w.gp),
                          w.direct ? RowsView<T>{dkh, s.k.row} : RowsView<T>{w.dkp, w.Dp},
                          w.direct ? RowsView<T>{dvh, s.v.row} : RowsView<T>{w.dvp, w.Dp},
                          dq + b * s.q.batch + h * s.q.head,
                          static_cast<T>(1 / std::sqrt(static_cast<double>(s.D)))};
  // K^T and V^T straight from the rows (TransposePadded reads L rows at once, so L cache misses are
  // in flight together).
  TransposePadded(s.T, s.D, kh, s.k.row, w.Tp, w.kt);
  TransposePadded(s.T, s.D, v + b * s.v.batch + h * s.v.head, s.v.row, w.Tp, w.vt);
  if (w.Bq < s.T) StartSums(s, a, w.Dp);  // several chunks add into the sums
  for (int64_t i = 0; i < s.T; ++i) w.delta[i] = Dot(s.D, gh + i * s.o.row, oh + i * s.o.row);
  for (int64_t c0 = 0; c0 < s.T; c0 += w.Bq) BackwardChunk(s, a, c0, std::min(s.T, c0 + w.Bq), w);
  if (!w.direct) CopySums(s, a, dkh, dvh);
}

// Prefetches the backward's operands of part p = b H + h: they were written long before (in the
// forward), and a head's strided rows, read one after the other, would wait for one cache miss
// after another. Called for the next part while this one computes.
template <typename T>
HWY_INLINE void PrefetchBackwardHead(const AttentionShape& s, int64_t p, const T* q, const T* k, const T* v,
                                     const T* o, const T* dout) {
  const int64_t b = p / s.H, h = p % s.H;
  PrefetchRows(s.T, s.D, k + b * s.k.batch + h * s.k.head, s.k.row);
  PrefetchRows(s.T, s.D, v + b * s.v.batch + h * s.v.head, s.v.row);
  PrefetchRows(s.T, s.D, q + b * s.q.batch + h * s.q.head, s.q.row);
  PrefetchRows(s.T, s.D, dout + b * s.o.batch + h * s.o.head, s.o.row);
  PrefetchRows(s.T, s.D, o + b * s.o.batch + h * s.o.head, s.o.row);
}

// Threads for B H heads of about T^2 D multiply-adds each (1 when small).
inline int AttentionThreads(const AttentionShape& s) {
  return grain_threads(s.B * s.H * s.T * s.T * std::max<int64_t>(s.D, 1), s.B * s.H, autograd::grains().attention);
}

// Each (b, h) allocates its scratch once, outside the loops over rows.
template <typename T>
void AttentionForward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o, T* lse, T* p) {
  const int64_t parts = s.B * s.H;
  if (parts == 0 || s.T == 0) return;
  base::parallel_parts(AttentionThreads(s), parts, [&](int64_t part) HWY_ATTR {
    ForwardScratch<T> w(s);
    AttentionForwardHead(s, part / s.H, part % s.H, q, k, v, o, lse, p, w);
  });
}

template <typename T>
void AttentionBackward(const AttentionShape& s, const T* q, const T* k, const T* v, const T* o, const T* dout,
                       const T* lse, T* dq, T* dk, T* dv, const T* p) {
  const int64_t parts = s.B * s.H;
  if (parts == 0 || s.T == 0) return;
  base::parallel_parts(AttentionThreads(s), parts, [&](int64_t part) HWY_ATTR {
    BackwardScratch<T> w(s);
    if (part + 1 < parts) PrefetchBackwardHead(s, part + 1, q, k, v, o, dout);
    AttentionBackwardHead(s, part / s.H, part % s.H, q, k, v, o, dout, lse, dq, dk, dv, p, w);
  });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
