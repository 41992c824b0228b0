// Normalization kernels, per-target Highway bodies (included once per target by norm.cc).
// Every loop handles full vectors first and then a one-lane tail with the same generic lambda, so
// no length needs a masked load (which may fault on AMD AVX2) and HWY_SCALAR (1 lane) just works.

#if defined(NORMLAB_AUTOGRAD_KERNELS_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_NORM_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_NORM_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_NORM_INL_H_
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "autograd/kernels/loop-inl.h"
#include "autograd/kernels/norm.h"
#include "autograd/kernels/norm_parallel.h"
#include "autograd/kernels/stream.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- Loop helpers (ForRow, WithFlag: loop-inl.h) -----------------------------------------------------

// Stores f(d, j) at y + j for a row of n outputs: full vectors, then one-lane tails. With stream
// (stream.h), the full vectors at vector-aligned addresses are non-temporal (the head before the
// first aligned address goes through one-lane stores). f computes each lane with the same operations on any tag,
// so the values never depend on how the row was cut.
template <typename T, class F>
HWY_INLINE void StoreRow(int64_t n, T* HWY_RESTRICT y, bool stream, const F& f) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  if (stream) {
    const uintptr_t align = static_cast<uintptr_t>(N) * sizeof(T);
    for (; j < n && reinterpret_cast<uintptr_t>(y + j) % align != 0; ++j) hn::StoreU(f(d1, j), d1, y + j);
    for (; j + N <= n; j += N) hn::Stream(f(d, j), d, y + j);
  } else {
    for (; j + N <= n; j += N) hn::StoreU(f(d, j), d, y + j);
  }
  for (; j < n; ++j) hn::StoreU(f(d1, j), d1, y + j);
}

// Parts of `rows` rows of n elements for row-parallel loops: about 64 KiB of input each.
HWY_INLINE int64_t RowsPerPart(int64_t n) { return std::max<int64_t>(1, (int64_t(16) << 10) / std::max<int64_t>(n, 1)); }

// Sum over i < n of a term of x[i], accumulated as acc = f(d, acc, x_vector). Four independent
// accumulators: one chain of dependent adds would wait 3-4 cycles per add, four keep both FP ports
// busy. The accumulators, their lanes and the tail are then added in a fixed order. With
// `prefetch`, prefetch[i] is fetched as x[i] is read (a later row: one memory stream alone does not
// keep enough lines in flight to reach the machine's bandwidth).
template <typename T, class F>
HWY_INLINE T SumRow(int64_t n, const T* HWY_RESTRICT x, const F& f, const T* prefetch = nullptr) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    if (prefetch)
      for (int64_t k = 0; k < 4; ++k) hwy::Prefetch(prefetch + i + k * N);
    a0 = f(d, a0, hn::LoadU(d, x + i));
    a1 = f(d, a1, hn::LoadU(d, x + i + N));
    a2 = f(d, a2, hn::LoadU(d, x + i + 2 * N));
    a3 = f(d, a3, hn::LoadU(d, x + i + 3 * N));
  }
  for (; i + N <= n; i += N) a0 = f(d, a0, hn::LoadU(d, x + i));
  T s = LaneSum(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)));
  const hn::CappedTag<T, 1> d1;
  for (; i < n; ++i) s += hn::GetLane(f(d1, hn::Zero(d1), hn::LoadU(d1, x + i)));
  return s;
}

// Two sums at once over i < n, step(d, p, q, i) adding the terms at i into the accumulators p and
// q; two accumulators per sum (four chains). Results in s1, s2.
template <typename T, class Step>
HWY_INLINE void SumRow2(int64_t n, const Step& step, T& s1, T& s2) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto p0 = hn::Zero(d), p1 = p0, q0 = p0, q1 = p0;
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    step(d, p0, q0, i);
    step(d, p1, q1, i + N);
  }
  for (; i + N <= n; i += N) step(d, p0, q0, i);
  s1 = LaneSum(d, hn::Add(p0, p1));
  s2 = LaneSum(d, hn::Add(q0, q1));
  const hn::CappedTag<T, 1> d1;
  for (; i < n; ++i) {
    auto p = hn::Zero(d1), q = hn::Zero(d1);
    step(d1, p, q, i);
    s1 += hn::GetLane(p);
    s2 += hn::GetLane(q);
  }
}

template <typename T>
void ZeroArray(int64_t n, T* p) {
  if (p && n > 0) std::memset(p, 0, n * sizeof(T));
}

// hi + lo == a + b exactly, hi = fl(a + b) (Knuth's TwoSum; the build never reassociates floats).
template <typename T>
HWY_INLINE void TwoSum(T a, T b, T& hi, T& lo) {
  hi = a + b;
  const T bb = hi - a;
  lo = (a - (hi - bb)) + (b - bb);
}

// Stores the mean s + delta as the pair mean[i], mean_lo[i] (either may be null).
template <typename T>
HWY_INLINE void StoreMean(T s, T delta, T* mean, T* mean_lo, int64_t i) {
  T hi, lo;
  TwoSum(s, delta, hi, lo);
  if (mean) mean[i] = hi;
  if (mean_lo) mean_lo[i] = lo;
}

// The same for a delta held in double (BatchNorm's merged statistics): for float the pair is the
// double s + delta split in two floats, so that delta's own rounding to float is kept in mean_lo.
template <typename T>
HWY_INLINE void StoreMeanOfDouble(T s, double delta, T* mean, T* mean_lo, int64_t i) {
  if constexpr (sizeof(T) == 4) {
    const double m = static_cast<double>(s) + delta;
    const T hi = static_cast<T>(m);
    if (mean) mean[i] = hi;
    if (mean_lo) mean_lo[i] = static_cast<T>(m - static_cast<double>(hi));
  } else {
    StoreMean(s, static_cast<T>(delta), mean, mean_lo, i);
  }
}

// ---- Row statistics (LayerNorm, GroupNorm) ------------------------------------------------------

// Statistics of one row, shifted by its first element s: delta = mean(x - s), so mu = s + delta,
// and rstd = 1 / sqrt(mean((x - s - delta)^2) + eps). For a row with a large mean (1e4 + randn in
// float32, seed 003) x - s is exact, so neither delta nor the variance loses precision; the output
// uses (x - s) - delta rather than x - mu, whose rounded mu would cost ~1e-3, and mu is stored as
// the exact pair TwoSum(s, delta) for the backward.
template <typename T>
struct RowStats {
  T shift, delta, rstd;
};

template <typename T>
HWY_INLINE RowStats<T> ComputeRowStats(int64_t n, const T* HWY_RESTRICT x, double eps,
                                       const T* prefetch = nullptr) {
  const T s = n > 0 ? x[0] : T(0);
  const T sum = SumRow(
      n, x, [s](auto d, auto acc, auto v) { return hn::Add(acc, hn::Sub(v, hn::Set(d, s))); }, prefetch);
  const T delta = n > 0 ? static_cast<T>(static_cast<double>(sum) / n) : T(0);
  // Second pass over the row (now in L1): sum of squared deviations.
  const T ss = SumRow(n, x, [s, delta](auto d, auto acc, auto v) {
    const auto c = hn::Sub(hn::Sub(v, hn::Set(d, s)), hn::Set(d, delta));
    return hn::MulAdd(c, c, acc);
  });
  return {s, delta, static_cast<T>(ref::inv_std(n > 0 ? static_cast<double>(ss) / n : 0.0, eps))};
}

// ---- LayerNorm ------------------------------------------------------------------------------------

// Rows of a block: their statistics first, then their outputs, so that the rows' dependency chains
// (two lane sums, a division and a square root each) overlap instead of running one after another;
// each row's arithmetic is the same as one row alone.
constexpr int64_t kStatRows = 4;

// Rows r0 .. r1-1. Each row is read once from memory (the statistics' second pass and the output
// pass read it from L1) and y is written once, streamed when large.
template <typename T, bool kGamma, bool kBeta>
void LayerNormForwardT(int64_t r0, int64_t r1, int64_t n, const T* HWY_RESTRICT x, const T* HWY_RESTRICT gamma,
                       const T* HWY_RESTRICT beta, double eps, bool stream, T* HWY_RESTRICT y, T* mean, T* mean_lo,
                       T* rstd) {
  for (int64_t b0 = r0; b0 < r1; b0 += kStatRows) {
    const int64_t b1 = std::min(r1, b0 + kStatRows);
    RowStats<T> st[kStatRows];
    for (int64_t i = b0; i < b1; ++i) {
      // The first pass reads the row from memory and fetches the row one block ahead.
      const T* xr = x + i * n;
      st[i - b0] = ComputeRowStats(n, xr, eps, i + kStatRows < r1 ? xr + kStatRows * n : nullptr);
    }
    for (int64_t i = b0; i < b1; ++i) {
      const T* xr = x + i * n;
      const T shift = st[i - b0].shift, delta = st[i - b0].delta, r = st[i - b0].rstd;
      // Third pass, from L1: y = ((x - s) - delta) r gamma + beta.
      StoreRow<T>(n, y + i * n, stream, [xr, shift, delta, r, gamma, beta](auto d, int64_t j) {
        const auto c = hn::Sub(hn::Sub(hn::LoadU(d, xr + j), hn::Set(d, shift)), hn::Set(d, delta));
        auto out = hn::Mul(c, hn::Set(d, r));
        if constexpr (kGamma && kBeta) out = hn::MulAdd(out, hn::LoadU(d, gamma + j), hn::LoadU(d, beta + j));
        else if constexpr (kGamma) out = hn::Mul(out, hn::LoadU(d, gamma + j));
        else if constexpr (kBeta) out = hn::MulAdd(c, hn::Set(d, r), hn::LoadU(d, beta + j));
        return out;
      });
      StoreMean(shift, delta, mean, mean_lo, i);
      if (rstd) rstd[i] = r;
    }
  }
  if (stream) hwy::FlushStream();
}

// Rows are independent: threads take parts of consecutive rows.
template <typename T>
void LayerNormForward(int64_t rows, int64_t n, const T* x, const T* gamma, const T* beta, double eps, T* y,
                      T* mean, T* mean_lo, T* rstd) {
  const bool stream = stream_output(rows * n, sizeof(T));
  const int64_t per = RowsPerPart(n), parts = (rows + per - 1) / per;
  WithFlag(gamma != nullptr, [&](auto kg) {
    WithFlag(beta != nullptr, [&](auto kb) {
      base::parallel_parts(norm_threads(rows * n, parts), parts, [&](int64_t p) {
        LayerNormForwardT<T, decltype(kg)::value, decltype(kb)::value>(
            p * per, std::min(rows, (p + 1) * per), n, x, gamma, beta, eps, stream, y, mean, mean_lo, rstd);
      });
    });
  });
}

// Backward of LayerNorm (kCenter) and RMSNorm (!kCenter: mu = 0 and no mean_n(g) term) on rows
// r0 .. r1-1, xhat = ((x - mean) - mean_lo) r:
//   pass A (x, dy from memory): sg = sum g, sgx = sum g xhat, and dgamma += dy xhat, dbeta += dy;
//   pass B (from L1): dx = r (g - sg/n - xhat sgx/n), streamed when large.
// dgamma and dbeta here are this part's own sums (zeroed first), rows added in order.
template <typename T, bool kCenter, bool kGamma, bool kDGamma, bool kDBeta>
void RowNormBackwardT(int64_t r0, int64_t r1, int64_t n, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT x,
                      const T* mean, const T* mean_lo, const T* rstd, const T* HWY_RESTRICT gamma, bool stream,
                      T* HWY_RESTRICT dx, T* HWY_RESTRICT dgamma, T* HWY_RESTRICT dbeta) {
  if constexpr (kDGamma) ZeroArray(n, dgamma);
  if constexpr (kDBeta) ZeroArray(n, dbeta);
  for (int64_t i = r0; i < r1; ++i) {
    const T *xr = x + i * n, *dyr = dy + i * n;
    const T mu = kCenter ? mean[i] : T(0), lo = kCenter && mean_lo ? mean_lo[i] : T(0), r = rstd[i];
    // xhat and g = dy gamma at j, on the tag d.
    auto xhat = [&](auto d, int64_t j) {
      const auto v = hn::LoadU(d, xr + j);
      if constexpr (kCenter) return hn::Mul(hn::Sub(hn::Sub(v, hn::Set(d, mu)), hn::Set(d, lo)), hn::Set(d, r));
      else return hn::Mul(v, hn::Set(d, r));
    };
    auto grad = [&](auto d, int64_t j, auto dyv) {
      if constexpr (kGamma) return hn::Mul(dyv, hn::LoadU(d, gamma + j));
      else return dyv;
    };
    T sg = 0, sgx = 0;
    const int64_t ahead = i + 2 < r1 ? 2 * n : 0;  // the row after next, fetched during pass A
    SumRow2<T>(n, [&](auto d, auto& p, auto& q, int64_t j) {
      hwy::Prefetch(xr + ahead + j);
      hwy::Prefetch(dyr + ahead + j);
      const auto dyv = hn::LoadU(d, dyr + j);
      const auto xh = xhat(d, j), g = grad(d, j, dyv);
      p = hn::Add(p, g);
      q = hn::MulAdd(g, xh, q);
      if constexpr (kDGamma) hn::StoreU(hn::MulAdd(dyv, xh, hn::LoadU(d, dgamma + j)), d, dgamma + j);
      if constexpr (kDBeta) hn::StoreU(hn::Add(hn::LoadU(d, dbeta + j), dyv), d, dbeta + j);
    }, sg, sgx);
    if (!dx) continue;
    const T mg = kCenter ? static_cast<T>(static_cast<double>(sg) / n) : T(0);
    const T mgx = static_cast<T>(static_cast<double>(sgx) / n);
    const int64_t next = i + 1 < r1 ? n : 0;  // the next row's x and dy, fetched during pass B
    StoreRow<T>(n, dx + i * n, stream, [&](auto d, int64_t j) {
      hwy::Prefetch(xr + next + j);
      hwy::Prefetch(dyr + next + j);
      const auto xh = xhat(d, j), dyv = hn::LoadU(d, dyr + j);
      // t = g - mg (g for RMSNorm), with the product in an explicit FMA: the compiler may contract
      // a Mul feeding a Sub into one FMA, and differently for full vectors and one-lane tails, which
      // would make a value depend on where its row's head/tail split falls.
      auto t = grad(d, j, dyv);
      if constexpr (kCenter && kGamma) t = hn::MulSub(dyv, hn::LoadU(d, gamma + j), hn::Set(d, mg));
      else if constexpr (kCenter) t = hn::Sub(dyv, hn::Set(d, mg));
      return hn::Mul(hn::Set(d, r), hn::NegMulAdd(xh, hn::Set(d, mgx), t));
    });
  }
  if (stream) hwy::FlushStream();
}

// Threads take parts of consecutive rows. The parts depend only on the shape (at most 32, of at
// least 64 KiB of dy each), never on the thread count; with several parts, each sums its rows'
// dgamma and dbeta into its own array and the arrays are then added in part order, so the result
// is the same bits on any number of threads.
template <typename T>
void RowNormBackward(bool center, int64_t rows, int64_t n, const T* dy, const T* x, const T* mean,
                     const T* mean_lo, const T* rstd, const T* gamma, T* dx, T* dgamma, T* dbeta) {
  const bool stream = dx && stream_output(rows * n, sizeof(T));
  const int64_t per = std::max<int64_t>(RowsPerPart(n), (rows + 31) / 32);
  const int64_t parts = std::max<int64_t>(1, (rows + per - 1) / per);
  // parts x (dgamma, dbeta) when several parts: one allocation per call, not zeroed (each part
  // zeroes its own sums first).
  const bool partials = parts > 1 && (dgamma || dbeta);
  const std::unique_ptr<T[]> partial(partials ? new T[static_cast<size_t>(parts * 2 * n)] : nullptr);
  WithFlag(center, [&](auto kc) {
    WithFlag(gamma != nullptr, [&](auto kg) {
      WithFlag(dgamma != nullptr, [&](auto kdg) {
        WithFlag(dbeta != nullptr, [&](auto kdb) {
          base::parallel_parts(norm_threads(rows * n, parts), parts, [&](int64_t q) {
            const int64_t p = parts - 1 - q;  // last rows first: the forward just read them
            T* pg = !partials ? dgamma : partial.get() + p * 2 * n;
            T* pb = !partials ? dbeta : partial.get() + p * 2 * n + n;
            RowNormBackwardT<T, decltype(kc)::value, decltype(kg)::value, decltype(kdg)::value,
                             decltype(kdb)::value>(p * per, std::min(rows, (p + 1) * per), n, dy, x, mean, mean_lo,
                                                   rstd, gamma, stream, dx, pg, pb);
          });
        });
      });
    });
  });
  if (!partials) return;
  // out[j] = part 0 + part 1 + ... in part order for every column j; columns split over threads in
  // blocks of 64 (the sums do not depend on the split).
  const int64_t blocks = (n + 63) / 64, cparts = std::min<int64_t>(blocks, 8);
  base::parallel_parts(norm_threads(parts * n, cparts), cparts, [&](int64_t q) HWY_ATTR {
    const int64_t j0 = blocks * q / cparts * 64, j1 = std::min(n, blocks * (q + 1) / cparts * 64);
    for (int64_t w = 0; w < 2; ++w) {
      T* out = w == 0 ? dgamma : dbeta;
      if (!out || j0 >= j1) continue;
      std::memcpy(out + j0, partial.get() + w * n + j0, (j1 - j0) * sizeof(T));
      for (int64_t p = 1; p < parts; ++p) {
        const T* src = partial.get() + p * 2 * n + w * n + j0;
        T* o = out + j0;
        ForRow<T>(j1 - j0, [&](auto d, int64_t j) HWY_ATTR {
          hn::StoreU(hn::Add(hn::LoadU(d, o + j), hn::LoadU(d, src + j)), d, o + j);
        });
      }
    }
  });
}

// ---- RMSNorm --------------------------------------------------------------------------------------

template <typename T>
void RmsNormForward(int64_t rows, int64_t n, const T* HWY_RESTRICT x, const T* HWY_RESTRICT gamma, double eps,
                    T* HWY_RESTRICT y, T* rstd) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* xr = x + i * n;
    T* yr = y + i * n;
    const T ss = SumRow(n, xr, [](auto, auto acc, auto v) { return hn::MulAdd(v, v, acc); });
    const T r = static_cast<T>(ref::inv_std(n > 0 ? static_cast<double>(ss) / n : 0.0, eps));
    ForRow<T>(n, [&](auto d, int64_t j) {
      auto out = hn::Mul(hn::LoadU(d, xr + j), hn::Set(d, r));
      if (gamma) out = hn::Mul(out, hn::LoadU(d, gamma + j));
      hn::StoreU(out, d, yr + j);
    });
    if (rstd) rstd[i] = r;
  }
}

// ---- GroupNorm ------------------------------------------------------------------------------------

// Rows are (sample, group) pairs of cg = C/G channels of S positions each; channel c = g cg + k.
template <typename T>
void GroupNormForward(int64_t N, int64_t C, int64_t S, int64_t G, const T* HWY_RESTRICT x,
                      const T* HWY_RESTRICT gamma, const T* HWY_RESTRICT beta, double eps, T* HWY_RESTRICT y,
                      T* mean, T* mean_lo, T* rstd) {
  const int64_t cg = C / G, n = cg * S;
  for (int64_t i = 0; i < N * G; ++i) {
    const RowStats<T> st = ComputeRowStats(n, x + i * n, eps);
    for (int64_t k = 0; k < cg; ++k) {
      const int64_t c = (i % G) * cg + k;
      // Per channel: y = ((x - s) - delta) (r gamma_c) + beta_c.
      const T scale = gamma ? st.rstd * gamma[c] : st.rstd, shift = beta ? beta[c] : T(0);
      const T* xs = x + i * n + k * S;
      T* ys = y + i * n + k * S;
      ForRow<T>(S, [&](auto d, int64_t j) {
        const auto v = hn::Sub(hn::Sub(hn::LoadU(d, xs + j), hn::Set(d, st.shift)), hn::Set(d, st.delta));
        hn::StoreU(hn::MulAdd(v, hn::Set(d, scale), hn::Set(d, shift)), d, ys + j);
      });
    }
    StoreMean(st.shift, st.delta, mean, mean_lo, i);
    if (rstd) rstd[i] = st.rstd;
  }
}

// Per row (xhat = ((x - mean) - mean_lo) r): pass A, per channel c, sdy = sum dy and sdyx = sum dy xhat over S (these are also the
// channel's dbeta and dgamma terms); sg = sum_c gamma_c sdy, sgx = sum_c gamma_c sdyx. Pass B:
// dx = r (gamma_c dy - sg/n - xhat sgx/n).
template <typename T>
void GroupNormBackward(int64_t N, int64_t C, int64_t S, int64_t G, const T* HWY_RESTRICT dy,
                       const T* HWY_RESTRICT x, const T* mean, const T* mean_lo, const T* rstd,
                       const T* HWY_RESTRICT gamma, T* HWY_RESTRICT dx, T* HWY_RESTRICT dgamma,
                       T* HWY_RESTRICT dbeta) {
  const int64_t cg = C / G, n = cg * S;
  ZeroArray(C, dgamma);
  ZeroArray(C, dbeta);
  for (int64_t i = 0; i < N * G; ++i) {
    const T mu = mean[i], lo = mean_lo ? mean_lo[i] : T(0), r = rstd[i];
    auto xhat = [&](auto d, const T* xp) {
      return hn::Mul(hn::Sub(hn::Sub(hn::LoadU(d, xp), hn::Set(d, mu)), hn::Set(d, lo)), hn::Set(d, r));
    };
    T sg = 0, sgx = 0;
    for (int64_t k = 0; k < cg; ++k) {
      const int64_t c = (i % G) * cg + k, off = i * n + k * S;
      T sdy, sdyx;
      SumRow2<T>(S, [&](auto d, auto& p, auto& q, int64_t j) {
        const auto dyv = hn::LoadU(d, dy + off + j);
        const auto xh = xhat(d, x + off + j);
        p = hn::Add(p, dyv);
        q = hn::MulAdd(dyv, xh, q);
      }, sdy, sdyx);
      const T gc = gamma ? gamma[c] : T(1);
      sg += gc * sdy;
      sgx += gc * sdyx;
      if (dgamma) dgamma[c] += sdyx;
      if (dbeta) dbeta[c] += sdy;
    }
    if (!dx) continue;
    const T mg = static_cast<T>(static_cast<double>(sg) / n), mgx = static_cast<T>(static_cast<double>(sgx) / n);
    for (int64_t k = 0; k < cg; ++k) {
      const int64_t c = (i % G) * cg + k, off = i * n + k * S;
      const T gc = gamma ? gamma[c] : T(1);
      ForRow<T>(S, [&](auto d, int64_t j) {
        const auto xh = xhat(d, x + off + j);
        const auto t = hn::MulSub(hn::LoadU(d, dy + off + j), hn::Set(d, gc), hn::Set(d, mg));  // g - mg
        hn::StoreU(hn::Mul(hn::Set(d, r), hn::NegMulAdd(xh, hn::Set(d, mgx), t)), d, dx + off + j);
      });
    }
  }
}

// ---- BatchNorm ------------------------------------------------------------------------------------
// Two layouts: L == 1, the (N, C) batch of an MLP, runs SIMD along C with per-channel arrays loaded
// as vectors (never a strided per-channel loop); L > 1 runs SIMD along each contiguous run of L.
// Threads: the per-channel sums split the channels (every lane of a vector computes its channel
// with the same operations as a one-lane tail, so a channel's result never depends on where a
// split falls); the elementwise passes split the rows.

// The channel range [c0, c1) of part p of `parts` over C channels, cut at multiples of 16 channels
// (whole vectors and cache lines on every target).
HWY_INLINE void ChannelRange(int64_t C, int64_t p, int64_t parts, int64_t& c0, int64_t& c1) {
  auto cut = [&](int64_t q) { return q == parts ? C : std::min(C, (C * q / parts) / 16 * 16); };
  c0 = cut(p), c1 = cut(p + 1);
}

// Parts for a channel split: one per thread, none thinner than 16 channels.
HWY_INLINE int64_t ChannelParts(int64_t elems, int64_t C) {
  return std::max<int64_t>(1, std::min<int64_t>(norm_threads(elems, C / 16), C / 16));
}

// Per-channel scratch: `arrays` arrays of C values, zeroed, each starting on a 64-byte line and
// padded to whole 16-channel blocks, so that the channel parts of different threads (ChannelRange
// cuts at multiples of 16) never write one cache line. In plain std::vector arrays the parts'
// running sums shared a line at every cut, and the line moved between the cores every few rows:
// the statistics ran several times slower on 2 threads than on one (bench/results/).
template <typename T>
class ChannelArrays {
 public:
  ChannelArrays(int arrays, int64_t C)
      : stride_(static_cast<size_t>((C + 15) / 16 * 16)), mem_(hwy::AllocateAligned<T>(arrays * stride_ + 1)) {
    std::fill(mem_.get(), mem_.get() + arrays * stride_ + 1, T(0));
  }
  T* operator[](int i) { return mem_.get() + static_cast<size_t>(i) * stride_; }

 private:
  size_t stride_;
  hwy::AlignedFreeUniquePtr<T[]> mem_;
};

// BatchNorm's (N, C) statistics: Welford in blocks of this many rows (batch_norm_stats).
inline constexpr int64_t kWelfordRows = 64;

// Welford on channels [c0, c1) of the N rows of (*, C) data from `x`, d = x - shift (shift: a
// row of C values), down the rows from md = m2 = 0, four rows per load/store of the running (mean
// of d, M2) so that they stay in registers across the four updates; per lane the same update
// sequence as one row at a time: mean += (d - mean) / k; M2 += (d - mean_old)(d - mean_new).
// The rows ahead are prefetched while there are any, up to `readable` rows from x (those of the
// next block too: a block's last rows are then not read cold).
template <typename T>
void WelfordColumns(int64_t N, int64_t C, int64_t c0, int64_t c1, const T* HWY_RESTRICT x, const T* shift,
                    T* HWY_RESTRICT md, T* HWY_RESTRICT m2, int64_t readable) {
  int64_t i = 0;
  // 1 / k for the update at row k - 1, computed once per row (not per vector).
  auto inv = [](int64_t row) { return static_cast<T>(1.0 / static_cast<double>(row + 1)); };
  auto update = [&](auto d, auto& mv, auto& qv, auto x0, const T* xr, int64_t c, T inv_k) {
    const auto dv = hn::Sub(hn::LoadU(d, xr + c), x0);
    const auto delta = hn::Sub(dv, mv);
    mv = hn::MulAdd(delta, hn::Set(d, inv_k), mv);
    qv = hn::MulAdd(delta, hn::Sub(dv, mv), qv);
  };
  for (; i + 4 <= N; i += 4) {
    const T f0 = inv(i), f1 = inv(i + 1), f2 = inv(i + 2), f3 = inv(i + 3);
    const T *x0r = x + i * C, *x1r = x0r + C, *x2r = x1r + C, *x3r = x2r + C;
    const T* ahead = i + 8 <= readable ? x3r + C : nullptr;  // the next 4 rows, fetched meanwhile
    ForRow<T>(c1 - c0, [&](auto d, int64_t j) {
      const int64_t c = c0 + j;
      if (ahead)
        for (int64_t r = 0; r < 4; ++r) hwy::Prefetch(ahead + r * C + c);
      auto mv = hn::LoadU(d, md + c), qv = hn::LoadU(d, m2 + c);
      const auto x0 = hn::LoadU(d, shift + c);
      update(d, mv, qv, x0, x0r, c, f0);
      update(d, mv, qv, x0, x1r, c, f1);
      update(d, mv, qv, x0, x2r, c, f2);
      update(d, mv, qv, x0, x3r, c, f3);
      hn::StoreU(mv, d, md + c);
      hn::StoreU(qv, d, m2 + c);
    });
  }
  for (; i < N; ++i) {
    const T fi = inv(i);
    ForRow<T>(c1 - c0, [&](auto d, int64_t j) {
      const int64_t c = c0 + j;
      auto mv = hn::LoadU(d, md + c), qv = hn::LoadU(d, m2 + c);
      update(d, mv, qv, hn::LoadU(d, shift + c), x + i * C, c, fi);
      hn::StoreU(mv, d, md + c);
      hn::StoreU(qv, d, m2 + c);
    });
  }
}

// Chan's merge of a block (its mean of d bm, M2 bq) into the accumulators (am, aq) over channels
// [c0, c1), in double, SIMD over the channels: delta = bm - am; am += delta f; aq += delta^2 g + bq
// (f = nb / n, g = na nb / n).
template <typename T>
HWY_INLINE void MergeBlock(int64_t c0, int64_t c1, const T* HWY_RESTRICT bm, const T* HWY_RESTRICT bq,
                           double* HWY_RESTRICT am, double* HWY_RESTRICT aq, double f, double g) {
  const hn::ScalableTag<double> dd;
  const auto load = [dd](const T* p) {
    if constexpr (sizeof(T) == 4) return hn::PromoteTo(dd, hn::LoadU(hn::Rebind<float, decltype(dd)>(), p));
    else return hn::LoadU(dd, p);
  };
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const auto vf = hn::Set(dd, f), vg = hn::Set(dd, g);
  int64_t c = c0;
  for (; c + lanes <= c1; c += lanes) {
    const auto a = hn::LoadU(dd, am + c);
    const auto delta = hn::Sub(load(bm + c), a);
    hn::StoreU(hn::MulAdd(delta, vf, a), dd, am + c);
    hn::StoreU(hn::Add(hn::LoadU(dd, aq + c), hn::MulAdd(hn::Mul(delta, delta), vg, load(bq + c))), dd, aq + c);
  }
  for (; c < c1; ++c) {
    const double delta = static_cast<double>(bm[c]) - am[c];
    am[c] = std::fma(delta, f, am[c]);
    aq[c] += std::fma(delta * delta, g, static_cast<double>(bq[c]));
  }
}

template <typename T>
void BatchNormStats(int64_t N, int64_t C, int64_t L, const T* HWY_RESTRICT x, T* HWY_RESTRICT mean,
                    T* HWY_RESTRICT mean_lo, T* HWY_RESTRICT var) {
  const int64_t m = N * L;
  ZeroArray(C, mean);
  ZeroArray(C, mean_lo);
  ZeroArray(C, var);
  if (m == 0) return;
  if (L == 1) {
    // Welford down the rows on d = x - x[0, c] (exact for a large mean, so the running mean of d
    // keeps full precision): one read of x. In blocks of kWelfordRows rows, each block's (mean of
    // d, M2) in T merged into double accumulators (Chan et al. 1979: n = na + nb, delta = mb - ma,
    // mean = ma + delta nb / n, M2 = M2a + M2b + delta^2 na nb / n), so that the rounding error of
    // the statistics is that of one block, not one that grows with N (about sqrt(N) ulp in
    // float32: 6e-6 of the std at N = 8192). The order is fixed per channel: any thread count
    // gives the same bits.
    ChannelArrays<T> blk(2, C);         // a block's mean of d and M2: one allocation per call
    ChannelArrays<double> acc(2, C);    // the merged mean of d and M2
    T *bm = blk[0], *bq = blk[1];
    double *am = acc[0], *aq = acc[1];
    const int64_t parts = ChannelParts(N * C, C);
    base::parallel_parts(batch_norm_threads(N * C, parts), parts, [&](int64_t p) {
      int64_t c0, c1;
      ChannelRange(C, p, parts, c0, c1);
      for (int64_t r0 = 0; r0 < N; r0 += kWelfordRows) {
        const int64_t nb = std::min(kWelfordRows, N - r0);
        std::fill(bm + c0, bm + c1, T(0));
        std::fill(bq + c0, bq + c1, T(0));
        WelfordColumns(nb, C, c0, c1, x + r0 * C, x, bm, bq, N - r0);
        const double n = static_cast<double>(r0 + nb);
        MergeBlock(c0, c1, bm, bq, am, aq, nb / n, static_cast<double>(r0) * nb / n);
      }
    });
    for (int64_t c = 0; c < C; ++c) {
      StoreMeanOfDouble(x[c], am[c], mean, mean_lo, c);
      var[c] = static_cast<T>(aq[c] / N);
    }
    return;
  }
  // Two passes over each channel's N runs of L values, shifted by the channel's first value s;
  // each run's sum (SIMD lanes) added across the runs in double, so that the error does not grow
  // with N.
  base::parallel_parts(batch_norm_threads(m * C, C), C, [&](int64_t c) {
    const T s = x[c * L];
    double sum = 0;
    for (int64_t i = 0; i < N; ++i)
      sum += SumRow(L, x + (i * C + c) * L, [s](auto d, auto acc, auto v) { return hn::Add(acc, hn::Sub(v, hn::Set(d, s))); });
    const double mean_d = sum / m;
    const T delta = static_cast<T>(mean_d);
    double ss = 0;
    for (int64_t i = 0; i < N; ++i)
      ss += SumRow(L, x + (i * C + c) * L, [s, delta](auto d, auto acc, auto v) {
        const auto dv = hn::Sub(hn::Sub(v, hn::Set(d, s)), hn::Set(d, delta));
        return hn::MulAdd(dv, dv, acc);
      });
    // ss is about d - delta, delta rounded: the variance about the exact mean is ss/m - (mean_d - delta)^2.
    StoreMeanOfDouble(s, mean_d, mean, mean_lo, c);
    const double off = mean_d - static_cast<double>(delta);
    var[c] = static_cast<T>(ss / m - off * off);
  });
}

// Calls row(i0, i1) for parts of consecutive rows of `row_elems` elements each, on threads, the
// last part first: a pass right after one that read the rows in order then finds the rows it
// starts with still in the L3 cache (the outputs are streamed past it).
template <class Rows>
HWY_INLINE void ParallelRowsReversed(int64_t N, int64_t row_elems, const Rows& row) {
  const int64_t per = RowsPerPart(row_elems), parts = (N + per - 1) / per;
  base::parallel_parts(norm_threads(N * row_elems, parts), parts, [&](int64_t q) {
    const int64_t p = parts - 1 - q;
    row(p * per, std::min(N, (p + 1) * per));
  });
}

// y = ((x - mean_c) - mean_lo_c) scale_c + shift_c with scale = rstd gamma, shift = beta (centered
// first, so a large mean does not cancel away the precision as x scale + (shift - mean scale) would).
template <typename T>
void BatchNormNormalize(int64_t N, int64_t C, int64_t L, const T* HWY_RESTRICT x, const T* mean,
                        const T* mean_lo, const T* rstd, const T* gamma, const T* beta, T* HWY_RESTRICT y) {
  std::vector<T> coef(3 * C);  // scale, shift, mean_lo: one allocation per call, none in the loops
  T *scale = coef.data(), *shift = scale + C, *lo = shift + C;
  for (int64_t c = 0; c < C; ++c) {
    scale[c] = gamma ? rstd[c] * gamma[c] : rstd[c];
    shift[c] = beta ? beta[c] : T(0);
    lo[c] = mean_lo ? mean_lo[c] : T(0);
  }
  const bool stream = stream_output(N * C * L, sizeof(T));
  ParallelRowsReversed(N, C * L, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (L == 1) {
        const T* xr = x + i * C;
        const T* next = xr + (i + 2 < i1 ? 2 * C : 0);  // the row after next, fetched meanwhile
        // The pointers captured by value: captured by reference, GCC reloads them from the closure
        // after every store to y.
        const T *mu = mean, *ml = lo, *sc = scale, *sh = shift;
        StoreRow<T>(C, y + i * C, stream, [xr, next, mu, ml, sc, sh](auto d, int64_t c) {
          hwy::Prefetch(next + c);
          const auto v = hn::Sub(hn::Sub(hn::LoadU(d, xr + c), hn::LoadU(d, mu + c)), hn::LoadU(d, ml + c));
          return hn::MulAdd(v, hn::LoadU(d, sc + c), hn::LoadU(d, sh + c));
        });
        continue;
      }
      for (int64_t c = 0; c < C; ++c) {
        const T *xs = x + (i * C + c) * L, mu = mean[c], ml = lo[c], sc = scale[c], sh = shift[c];
        StoreRow<T>(L, y + (i * C + c) * L, stream, [&](auto d, int64_t l) {
          const auto v = hn::Sub(hn::Sub(hn::LoadU(d, xs + l), hn::Set(d, mu)), hn::Set(d, ml));
          return hn::MulAdd(v, hn::Set(d, sc), hn::Set(d, sh));
        });
      }
    }
    if (stream) hwy::FlushStream();
  });
}

// With xc = (x - mean_c) - mean_lo_c. Pass 1 (skipped in eval when no parameter gradient is wanted):
// sdy_c = sum dy and sdyx_c = sum dy xc, so dbeta = sdy and dgamma = r sdyx. Pass 2, with
// per-channel coefficients k = gamma r, a = sdy / m, b = r^2 sdyx / m:
//   training: dx = k (dy - a - xc b)   [= (gamma r / m)(m dy - sum dy - xhat sum dy xhat)]
//   eval:     dx = k dy.
// Pass 1 splits the channels (each channel sums its rows in order 0, 1, 2, ...), pass 2 the rows.
template <typename T>
void BatchNormBackward(int64_t N, int64_t C, int64_t L, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT x,
                       const T* mean, const T* mean_lo, const T* rstd, const T* gamma, bool training,
                       T* HWY_RESTRICT dx, T* dgamma, T* dbeta) {
  const int64_t m = N * L;
  ChannelArrays<T> buf(6, C);  // one allocation per call, none in the loops
  T *sdy = buf[0], *sdyx = buf[1], *k = buf[2], *a = buf[3], *b = buf[4], *lo = buf[5];
  if (mean_lo) std::memcpy(lo, mean_lo, C * sizeof(T));
  auto center = [](auto xv, auto mv, auto lv) { return hn::Sub(hn::Sub(xv, mv), lv); };
  if (training || dgamma || dbeta) {
    if (L == 1) {
      const int64_t parts = ChannelParts(N * C, C);
      base::parallel_parts(batch_norm_threads(N * C, parts), parts, [&](int64_t p) {
        int64_t c0, c1;
        ChannelRange(C, p, parts, c0, c1);
        // Four rows per load/store of the running sums (per lane the same adds, in row order).
        auto step = [&](auto d, auto& sv, auto& qv, auto mv, auto lv, const T* dyr, const T* xr, int64_t c) {
          const auto dyv = hn::LoadU(d, dyr + c);
          sv = hn::Add(sv, dyv);
          qv = hn::MulAdd(dyv, center(hn::LoadU(d, xr + c), mv, lv), qv);
        };
        int64_t i = 0;
        for (; i + 4 <= N; i += 4) {
          const T *d0 = dy + i * C, *d1 = d0 + C, *d2 = d1 + C, *d3 = d2 + C;
          const T *x0 = x + i * C, *x1 = x0 + C, *x2 = x1 + C, *x3 = x2 + C;
          const bool ahead = i + 8 <= N;  // the next 4 rows of dy and x, fetched meanwhile
          // The pointers captured by value (see BatchNormNormalize).
          T *ps = sdy, *pq = sdyx;
          const T *mu = mean, *ml = lo;
          ForRow<T>(c1 - c0, [d0, d1, d2, d3, x0, x1, x2, x3, ahead, c0, C, ps, pq, mu, ml, &step](auto d, int64_t j) {
            const int64_t c = c0 + j;
            if (ahead)
              for (int64_t r = 4; r < 8; ++r) {
                hwy::Prefetch(d0 + r * C + c);
                hwy::Prefetch(x0 + r * C + c);
              }
            auto sv = hn::LoadU(d, ps + c), qv = hn::LoadU(d, pq + c);
            const auto mv = hn::LoadU(d, mu + c), lv = hn::LoadU(d, ml + c);
            step(d, sv, qv, mv, lv, d0, x0, c);
            step(d, sv, qv, mv, lv, d1, x1, c);
            step(d, sv, qv, mv, lv, d2, x2, c);
            step(d, sv, qv, mv, lv, d3, x3, c);
            hn::StoreU(sv, d, ps + c);
            hn::StoreU(qv, d, pq + c);
          });
        }
        for (; i < N; ++i)
          ForRow<T>(c1 - c0, [&](auto d, int64_t j) {
            const int64_t c = c0 + j;
            auto sv = hn::LoadU(d, sdy + c), qv = hn::LoadU(d, sdyx + c);
            step(d, sv, qv, hn::LoadU(d, mean + c), hn::LoadU(d, lo + c), dy + i * C, x + i * C, c);
            hn::StoreU(sv, d, sdy + c);
            hn::StoreU(qv, d, sdyx + c);
          });
      });
    } else {
      base::parallel_parts(batch_norm_threads(m * C, C), C, [&](int64_t c) {
        const T mu = mean[c], ml = lo[c];
        T sum1 = T(0), sum2 = T(0);  // the channel's sums in registers, stored once
        for (int64_t i = 0; i < N; ++i) {
          const int64_t off = (i * C + c) * L;
          T s1, s2;
          SumRow2<T>(L, [&](auto d, auto& p, auto& q, int64_t l) {
            const auto dyv = hn::LoadU(d, dy + off + l);
            p = hn::Add(p, dyv);
            q = hn::MulAdd(dyv, center(hn::LoadU(d, x + off + l), hn::Set(d, mu), hn::Set(d, ml)), q);
          }, s1, s2);
          sum1 += s1;
          sum2 += s2;
        }
        sdy[c] = sum1;
        sdyx[c] = sum2;
      });
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    const double r = rstd[c], g = gamma ? gamma[c] : 1.0;
    if (dbeta) dbeta[c] = sdy[c];
    if (dgamma) dgamma[c] = static_cast<T>(r * sdyx[c]);
    k[c] = static_cast<T>(g * r);
    a[c] = training && m > 0 ? static_cast<T>(sdy[c] / static_cast<double>(m)) : T(0);
    b[c] = training && m > 0 ? static_cast<T>(r * r * sdyx[c] / static_cast<double>(m)) : T(0);
  }
  if (!dx) return;
  // dx at a vector of positions from dy, x and the channel's mean, mean_lo, k, a, b.
  auto dx_of = [training, center](auto dyv, auto xv, auto mv, auto lv, auto kv, auto av, auto bv) {
    if (!training) return hn::Mul(dyv, kv);
    return hn::Mul(kv, hn::NegMulAdd(center(xv, mv, lv), bv, hn::Sub(dyv, av)));
  };
  const bool stream = stream_output(m * C, sizeof(T));
  ParallelRowsReversed(N, C * L, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (L == 1) {
        const T *dyr = dy + i * C, *xr = x + i * C;
        const int64_t ahead = i + 2 < i1 ? 2 * C : 0;  // the row after next, fetched meanwhile
        // The pointers captured by value (see BatchNormNormalize).
        const T *mu = mean, *ml = lo, *kp = k, *ap = a, *bp = b;
        StoreRow<T>(C, dx + i * C, stream, [dyr, xr, ahead, mu, ml, kp, ap, bp, &dx_of](auto d, int64_t c) {
          hwy::Prefetch(dyr + ahead + c);
          hwy::Prefetch(xr + ahead + c);
          return dx_of(hn::LoadU(d, dyr + c), hn::LoadU(d, xr + c), hn::LoadU(d, mu + c), hn::LoadU(d, ml + c),
                       hn::LoadU(d, kp + c), hn::LoadU(d, ap + c), hn::LoadU(d, bp + c));
        });
        continue;
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t off = (i * C + c) * L;
        const T mu = mean[c], ml = lo[c], kc = k[c], ac = a[c], bc = b[c];
        StoreRow<T>(L, dx + off, stream, [&](auto d, int64_t l) {
          return dx_of(hn::LoadU(d, dy + off + l), hn::LoadU(d, x + off + l), hn::Set(d, mu), hn::Set(d, ml),
                       hn::Set(d, kc), hn::Set(d, ac), hn::Set(d, bc));
        });
      }
    }
    if (stream) hwy::FlushStream();
  });
}

// out = A_c a + B_c (x - mean_c) + G_c g + D_c, coef = [A | B | G | D | mean] (C each); a or g may
// be null (their terms dropped). BatchNorm's double backward, second sweep (autograd/norm_grad.cc).
template <typename T>
void ChannelCombine(int64_t N, int64_t C, int64_t L, const T* HWY_RESTRICT a, const T* HWY_RESTRICT x,
                    const T* HWY_RESTRICT g, const T* coef, T* HWY_RESTRICT out) {
  const T *A = coef, *B = A + C, *Gc = B + C, *D = Gc + C, *mean = D + C;
  const bool stream = stream_output(N * C * L, sizeof(T));
  ParallelRowsReversed(N, C * L, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (L == 1) {
        const int64_t o = i * C;
        // The pointers captured by value (see BatchNormNormalize).
        const T *ar = a ? a + o : nullptr, *xr = x + o, *gr = g ? g + o : nullptr;
        const T *pa = A, *pb = B, *pg = Gc, *pd = D, *pm = mean;
        StoreRow<T>(C, out + o, stream, [ar, xr, gr, pa, pb, pg, pd, pm](auto d, int64_t c) {
          auto v = hn::MulAdd(hn::Sub(hn::LoadU(d, xr + c), hn::LoadU(d, pm + c)), hn::LoadU(d, pb + c),
                              hn::LoadU(d, pd + c));
          if (ar) v = hn::MulAdd(hn::LoadU(d, ar + c), hn::LoadU(d, pa + c), v);
          if (gr) v = hn::MulAdd(hn::LoadU(d, gr + c), hn::LoadU(d, pg + c), v);
          return v;
        });
        continue;
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t off = (i * C + c) * L;
        const T *ar = a ? a + off : nullptr, *xr = x + off, *gr = g ? g + off : nullptr;
        const T ac = A[c], bc = B[c], gc = Gc[c], dc = D[c], mc = mean[c];
        StoreRow<T>(L, out + off, stream, [ar, xr, gr, ac, bc, gc, dc, mc](auto d, int64_t l) {
          auto v = hn::MulAdd(hn::Sub(hn::LoadU(d, xr + l), hn::Set(d, mc)), hn::Set(d, bc), hn::Set(d, dc));
          if (ar) v = hn::MulAdd(hn::LoadU(d, ar + l), hn::Set(d, ac), v);
          if (gr) v = hn::MulAdd(hn::LoadU(d, gr + l), hn::Set(d, gc), v);
          return v;
        });
      }
    }
    if (stream) hwy::FlushStream();
  });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
