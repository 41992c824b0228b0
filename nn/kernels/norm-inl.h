// Normalization kernels, per-target Highway bodies (included once per target by norm.cc).
// Every loop handles full vectors first and then a one-lane tail with the same generic lambda, so
// no length needs a masked load (which may fault on AMD AVX2) and HWY_SCALAR (1 lane) just works.

#if defined(NORMLAB_NN_KERNELS_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_NN_KERNELS_NORM_INL_H_
#undef NORMLAB_NN_KERNELS_NORM_INL_H_
#else
#define NORMLAB_NN_KERNELS_NORM_INL_H_
#endif

#include <cstring>
#include <type_traits>
#include <vector>

#include "hwy/highway.h"
#include "nn/kernels/norm.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::nn::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- Loop helpers ---------------------------------------------------------------------------------

// Calls body(d, i) at each full vector of a row of n elements, then body(d1, i) at each remaining
// element with a one-lane tag d1.
template <typename T, class Body>
HWY_INLINE void ForRow(int64_t n, const Body& body) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) body(d, i);
  const hn::CappedTag<T, 1> d1;
  for (; i < n; ++i) body(d1, i);
}

// The lanes of v added in lane order (not SumOfLanes, whose shuffle order differs between targets).
template <class D, class V>
HWY_INLINE hn::TFromD<D> LaneSum(D d, V v) {
  using T = hn::TFromD<D>;
  HWY_ALIGN T lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  T s = lanes[0];
  for (size_t i = 1; i < hn::Lanes(d); ++i) s += lanes[i];
  return s;
}

// Sum over i < n of a term of x[i], accumulated as acc = f(d, acc, x_vector). Four independent
// accumulators: one chain of dependent adds would wait 3-4 cycles per add, four keep both FP ports
// busy. The accumulators, their lanes and the tail are then added in a fixed order.
template <typename T, class F>
HWY_INLINE T SumRow(int64_t n, const T* HWY_RESTRICT x, const F& f) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
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

// Turns a runtime flag into a compile-time one: f(std::true_type{}) or f(std::false_type{}).
template <class F>
HWY_INLINE void WithFlag(bool flag, const F& f) {
  if (flag) f(std::true_type{});
  else f(std::false_type{});
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
HWY_INLINE RowStats<T> ComputeRowStats(int64_t n, const T* HWY_RESTRICT x, double eps) {
  const T s = n > 0 ? x[0] : T(0);
  const T sum = SumRow(n, x, [s](auto d, auto acc, auto v) { return hn::Add(acc, hn::Sub(v, hn::Set(d, s))); });
  const T delta = n > 0 ? static_cast<T>(static_cast<double>(sum) / n) : T(0);
  // Second pass over the row (now in L1): sum of squared deviations.
  const T ss = SumRow(n, x, [s, delta](auto d, auto acc, auto v) {
    const auto c = hn::Sub(hn::Sub(v, hn::Set(d, s)), hn::Set(d, delta));
    return hn::MulAdd(c, c, acc);
  });
  return {s, delta, static_cast<T>(ref::inv_std(n > 0 ? static_cast<double>(ss) / n : 0.0, eps))};
}

// ---- LayerNorm ------------------------------------------------------------------------------------

template <typename T, bool kGamma, bool kBeta>
void LayerNormForwardT(int64_t rows, int64_t n, const T* HWY_RESTRICT x, const T* HWY_RESTRICT gamma,
                       const T* HWY_RESTRICT beta, double eps, T* HWY_RESTRICT y, T* mean, T* mean_lo, T* rstd) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* xr = x + i * n;
    T* yr = y + i * n;
    const RowStats<T> st = ComputeRowStats(n, xr, eps);
    // Third pass, from L1: y = ((x - s) - delta) r gamma + beta.
    ForRow<T>(n, [&](auto d, int64_t j) {
      const auto c = hn::Sub(hn::Sub(hn::LoadU(d, xr + j), hn::Set(d, st.shift)), hn::Set(d, st.delta));
      auto out = hn::Mul(c, hn::Set(d, st.rstd));
      if constexpr (kGamma && kBeta) out = hn::MulAdd(out, hn::LoadU(d, gamma + j), hn::LoadU(d, beta + j));
      else if constexpr (kGamma) out = hn::Mul(out, hn::LoadU(d, gamma + j));
      else if constexpr (kBeta) out = hn::Add(out, hn::LoadU(d, beta + j));
      hn::StoreU(out, d, yr + j);
    });
    StoreMean(st.shift, st.delta, mean, mean_lo, i);
    if (rstd) rstd[i] = st.rstd;
  }
}

template <typename T>
void LayerNormForward(int64_t rows, int64_t n, const T* x, const T* gamma, const T* beta, double eps, T* y,
                      T* mean, T* mean_lo, T* rstd) {
  WithFlag(gamma != nullptr, [&](auto kg) {
    WithFlag(beta != nullptr, [&](auto kb) {
      LayerNormForwardT<T, decltype(kg)::value, decltype(kb)::value>(rows, n, x, gamma, beta, eps, y, mean, mean_lo,
                                                                     rstd);
    });
  });
}

// Backward of LayerNorm (kCenter) and RMSNorm (!kCenter: mu = 0 and no mean_n(g) term) on rows,
// xhat = ((x - mean) - mean_lo) r:
//   pass A (x, dy from memory): sg = sum g, sgx = sum g xhat, and dgamma += dy xhat, dbeta += dy;
//   pass B (from L1): dx = r (g - sg/n - xhat sgx/n).
template <typename T, bool kCenter, bool kGamma, bool kDGamma, bool kDBeta>
void RowNormBackwardT(int64_t rows, int64_t n, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT x,
                      const T* mean, const T* mean_lo, const T* rstd, const T* HWY_RESTRICT gamma,
                      T* HWY_RESTRICT dx, T* HWY_RESTRICT dgamma, T* HWY_RESTRICT dbeta) {
  if constexpr (kDGamma) ZeroArray(n, dgamma);
  if constexpr (kDBeta) ZeroArray(n, dbeta);
  for (int64_t i = 0; i < rows; ++i) {
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
    SumRow2<T>(n, [&](auto d, auto& p, auto& q, int64_t j) {
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
    T* dxr = dx + i * n;
    ForRow<T>(n, [&](auto d, int64_t j) {
      const auto xh = xhat(d, j), g = grad(d, j, hn::LoadU(d, dyr + j));
      const auto t = kCenter ? hn::Sub(g, hn::Set(d, mg)) : g;
      hn::StoreU(hn::Mul(hn::Set(d, r), hn::NegMulAdd(xh, hn::Set(d, mgx), t)), d, dxr + j);
    });
  }
}

template <typename T>
void RowNormBackward(bool center, int64_t rows, int64_t n, const T* dy, const T* x, const T* mean,
                     const T* mean_lo, const T* rstd, const T* gamma, T* dx, T* dgamma, T* dbeta) {
  WithFlag(center, [&](auto kc) {
    WithFlag(gamma != nullptr, [&](auto kg) {
      WithFlag(dgamma != nullptr, [&](auto kdg) {
        WithFlag(dbeta != nullptr, [&](auto kdb) {
          RowNormBackwardT<T, decltype(kc)::value, decltype(kg)::value, decltype(kdg)::value,
                           decltype(kdb)::value>(rows, n, dy, x, mean, mean_lo, rstd, gamma, dx, dgamma, dbeta);
        });
      });
    });
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
    // keeps full precision), var holding M2 until the end: one read of x.
    std::vector<T> md(C, T(0));  // mean of d: one allocation per call, none in the loops
    for (int64_t i = 1; i < N; ++i) {  // row 0 has d = 0: mean 0, M2 0
      const T* xr = x + i * C;
      const T inv = static_cast<T>(1.0 / static_cast<double>(i + 1));
      ForRow<T>(C, [&](auto d, int64_t c) {
        const auto dv = hn::Sub(hn::LoadU(d, xr + c), hn::LoadU(d, x + c));
        const auto mold = hn::LoadU(d, md.data() + c);
        const auto delta = hn::Sub(dv, mold);
        const auto mnew = hn::MulAdd(delta, hn::Set(d, inv), mold);
        hn::StoreU(mnew, d, md.data() + c);
        hn::StoreU(hn::MulAdd(delta, hn::Sub(dv, mnew), hn::LoadU(d, var + c)), d, var + c);
      });
    }
    for (int64_t c = 0; c < C; ++c) {
      StoreMean(x[c], md[c], mean, mean_lo, c);
      var[c] = static_cast<T>(static_cast<double>(var[c]) / N);
    }
    return;
  }
  // Two passes over each channel's N runs of L values, shifted by the channel's first value s.
  for (int64_t c = 0; c < C; ++c) {
    const T s = x[c * L];
    T sum = 0;
    for (int64_t i = 0; i < N; ++i)
      sum += SumRow(L, x + (i * C + c) * L, [s](auto d, auto acc, auto v) { return hn::Add(acc, hn::Sub(v, hn::Set(d, s))); });
    const T delta = static_cast<T>(static_cast<double>(sum) / m);
    T ss = 0;
    for (int64_t i = 0; i < N; ++i)
      ss += SumRow(L, x + (i * C + c) * L, [s, delta](auto d, auto acc, auto v) {
        const auto dv = hn::Sub(hn::Sub(v, hn::Set(d, s)), hn::Set(d, delta));
        return hn::MulAdd(dv, dv, acc);
      });
    StoreMean(s, delta, mean, mean_lo, c);
    var[c] = static_cast<T>(static_cast<double>(ss) / m);
  }
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
  if (L == 1) {
    for (int64_t i = 0; i < N; ++i) {
      const T* xr = x + i * C;
      T* yr = y + i * C;
      ForRow<T>(C, [&](auto d, int64_t c) {
        const auto v = hn::Sub(hn::Sub(hn::LoadU(d, xr + c), hn::LoadU(d, mean + c)), hn::LoadU(d, lo + c));
        hn::StoreU(hn::MulAdd(v, hn::LoadU(d, scale + c), hn::LoadU(d, shift + c)), d, yr + c);
      });
    }
    return;
  }
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c) {
      const T *xs = x + (i * C + c) * L, mu = mean[c], ml = lo[c], sc = scale[c], sh = shift[c];
      T* ys = y + (i * C + c) * L;
      ForRow<T>(L, [&](auto d, int64_t l) {
        const auto v = hn::Sub(hn::Sub(hn::LoadU(d, xs + l), hn::Set(d, mu)), hn::Set(d, ml));
        hn::StoreU(hn::MulAdd(v, hn::Set(d, sc), hn::Set(d, sh)), d, ys + l);
      });
    }
}

// With xc = (x - mean_c) - mean_lo_c. Pass 1 (skipped in eval when no parameter gradient is wanted):
// sdy_c = sum dy and sdyx_c = sum dy xc, so dbeta = sdy and dgamma = r sdyx. Pass 2, with
// per-channel coefficients k = gamma r, a = sdy / m, b = r^2 sdyx / m:
//   training: dx = k (dy - a - xc b)   [= (gamma r / m)(m dy - sum dy - xhat sum dy xhat)]
//   eval:     dx = k dy.
template <typename T>
void BatchNormBackward(int64_t N, int64_t C, int64_t L, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT x,
                       const T* mean, const T* mean_lo, const T* rstd, const T* gamma, bool training,
                       T* HWY_RESTRICT dx, T* dgamma, T* dbeta) {
  const int64_t m = N * L;
  std::vector<T> buf(6 * C, T(0));  // one allocation per call, none in the loops
  T *sdy = buf.data(), *sdyx = sdy + C, *k = sdyx + C, *a = k + C, *b = a + C, *lo = b + C;
  if (mean_lo) std::memcpy(lo, mean_lo, C * sizeof(T));
  auto center = [](auto xv, auto mv, auto lv) { return hn::Sub(hn::Sub(xv, mv), lv); };
  if (training || dgamma || dbeta) {
    if (L == 1) {
      for (int64_t i = 0; i < N; ++i) {
        const T *dyr = dy + i * C, *xr = x + i * C;
        ForRow<T>(C, [&](auto d, int64_t c) {
          const auto dyv = hn::LoadU(d, dyr + c);
          const auto xc = center(hn::LoadU(d, xr + c), hn::LoadU(d, mean + c), hn::LoadU(d, lo + c));
          hn::StoreU(hn::Add(hn::LoadU(d, sdy + c), dyv), d, sdy + c);
          hn::StoreU(hn::MulAdd(dyv, xc, hn::LoadU(d, sdyx + c)), d, sdyx + c);
        });
      }
    } else {
      for (int64_t i = 0; i < N; ++i)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t off = (i * C + c) * L;
          const T mu = mean[c], ml = lo[c];
          T s1, s2;
          SumRow2<T>(L, [&](auto d, auto& p, auto& q, int64_t l) {
            const auto dyv = hn::LoadU(d, dy + off + l);
            p = hn::Add(p, dyv);
            q = hn::MulAdd(dyv, center(hn::LoadU(d, x + off + l), hn::Set(d, mu), hn::Set(d, ml)), q);
          }, s1, s2);
          sdy[c] += s1;
          sdyx[c] += s2;
        }
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
  if (L == 1) {
    for (int64_t i = 0; i < N; ++i) {
      const T *dyr = dy + i * C, *xr = x + i * C;
      T* dxr = dx + i * C;
      ForRow<T>(C, [&](auto d, int64_t c) {
        hn::StoreU(dx_of(hn::LoadU(d, dyr + c), hn::LoadU(d, xr + c), hn::LoadU(d, mean + c), hn::LoadU(d, lo + c),
                         hn::LoadU(d, k + c), hn::LoadU(d, a + c), hn::LoadU(d, b + c)),
                   d, dxr + c);
      });
    }
    return;
  }
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t off = (i * C + c) * L;
      const T mu = mean[c], ml = lo[c], kc = k[c], ac = a[c], bc = b[c];
      ForRow<T>(L, [&](auto d, int64_t l) {
        hn::StoreU(dx_of(hn::LoadU(d, dy + off + l), hn::LoadU(d, x + off + l), hn::Set(d, mu), hn::Set(d, ml),
                         hn::Set(d, kc), hn::Set(d, ac), hn::Set(d, bc)),
                   d, dx + off + l);
      });
    }
}

}  // namespace normlab::nn::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
