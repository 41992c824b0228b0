// Normalization kernels (public header, no SIMD types): LayerNorm, RMSNorm and GroupNorm over rows,
// BatchNorm over the batch, each a forward/backward pair. Highway bodies in norm-inl.h, dispatch in
// norm.cc; the scalar references in namespace ref below define what every SIMD target must compute.
//
// Conventions: all arrays are contiguous and row-major; `gamma`/`beta` may be null (meaning 1 and
// 0); outputs must not alias inputs; gradient outputs are overwritten (not accumulated) and may be
// null when not wanted. Every reduction runs in a fixed order that depends only on the shape and the
// Highway target, never on threads or timing, so results repeat bit for bit on any number of threads
// (autograd::num_threads(), fewer when the work is small: autograd/grain.h): rows are split
// between threads only where each row is its own reduction, BatchNorm's per-channel sums split the
// channels, and sums over rows (LayerNorm's dgamma, dbeta) go by parts fixed by the shape. Outputs of
// 4 MiB and more are written with streaming (non-temporal) stores. Variances are never computed as
// E[x^2] - E[x]^2, which loses all precision when the mean is large compared with the spread (rows
// with mean 1e4, a worked example of the tests).
//
// Means are kept as a pair: mean (the rounded mean) and mean_lo (the rounding error), so that
// mean + mean_lo is the mean to twice the precision of T. Statistics are computed on values shifted
// by one sample s of the row or channel (x - s is exact when the mean is large compared with the
// spread), and every pass then centers as (x - mean) - mean_lo: for float32 rows of 1e4 + randn the
// outputs match a float64 computation to 1e-5 instead of the ~1e-3 a rounded mean allows. mean_lo
// may be null: in outputs when not wanted, in inputs meaning 0 (e.g. BatchNorm's running mean).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace normlab::autograd::kernels {

// ---- LayerNorm over the rows of x: (rows, n) -> (rows, n) -------------------------------------------
// mu = mean(x_row), var = mean((x_row - mu)^2) (biased), r = 1 / sqrt(var + eps),
// y = (x - mu) r gamma + beta. Saves mean[rows] (+ mean_lo) and rstd[rows] = r for the backward.
// Two passes over each row for the statistics (the second reads it from L1), a third for y.
void layer_norm_forward(int64_t rows, int64_t n, const float* x, const float* gamma, const float* beta,
                        double eps, float* y, float* mean, float* mean_lo, float* rstd);
void layer_norm_forward(int64_t rows, int64_t n, const double* x, const double* gamma, const double* beta,
                        double eps, double* y, double* mean, double* mean_lo, double* rstd);
// With xhat = (x - mu) r and g = dy gamma:
//   dx = r (g - mean_n(g) - xhat mean_n(g xhat)),  dgamma = sum_rows(dy xhat),  dbeta = sum_rows(dy).
// dgamma and dbeta are (n): rows are added in order within parts of consecutive rows (at most 32
// parts, fixed by rows and n), then the parts' sums in part order.
void layer_norm_backward(int64_t rows, int64_t n, const float* dy, const float* x, const float* mean,
                         const float* mean_lo, const float* rstd, const float* gamma, float* dx, float* dgamma,
                         float* dbeta);
void layer_norm_backward(int64_t rows, int64_t n, const double* dy, const double* x, const double* mean,
                         const double* mean_lo, const double* rstd, const double* gamma, double* dx,
                         double* dgamma, double* dbeta);

// ---- RMSNorm over the rows of x: (rows, n) -> (rows, n) ---------------------------------------------
// r = 1 / sqrt(mean(x_row^2) + eps), y = x r gamma. Saves rstd[rows] = r.
void rms_norm_forward(int64_t rows, int64_t n, const float* x, const float* gamma, double eps, float* y,
                      float* rstd);
void rms_norm_forward(int64_t rows, int64_t n, const double* x, const double* gamma, double eps, double* y,
                      double* rstd);
// With xhat = x r and g = dy gamma: dx = r (g - xhat mean_n(g xhat)), dgamma = sum_rows(dy xhat).
void rms_norm_backward(int64_t rows, int64_t n, const float* dy, const float* x, const float* rstd,
                       const float* gamma, float* dx, float* dgamma);
void rms_norm_backward(int64_t rows, int64_t n, const double* dy, const double* x, const double* rstd,
                       const double* gamma, double* dx, double* dgamma);

// ---- GroupNorm: x (N, C, S) -> (N, C, S), G groups of C/G channels (C % G == 0) ----------------------
// Statistics as LayerNorm over each (sample, group) row of (C/G) S values, saved as mean[N*G] and
// rstd[N*G]; the affine is per channel: y = (x - mu_ng) r_ng gamma_c + beta_c.
void group_norm_forward(int64_t N, int64_t C, int64_t S, int64_t G, const float* x, const float* gamma,
                        const float* beta, double eps, float* y, float* mean, float* mean_lo, float* rstd);
void group_norm_forward(int64_t N, int64_t C, int64_t S, int64_t G, const double* x, const double* gamma,
                        const double* beta, double eps, double* y, double* mean, double* mean_lo, double* rstd);
// LayerNorm's backward on each (sample, group) row with g = dy gamma_c; dgamma[c] = sum(dy xhat) and
// dbeta[c] = sum(dy) over samples and positions.
void group_norm_backward(int64_t N, int64_t C, int64_t S, int64_t G, const float* dy, const float* x,
                         const float* mean, const float* mean_lo, const float* rstd, const float* gamma, float* dx,
                         float* dgamma, float* dbeta);
void group_norm_backward(int64_t N, int64_t C, int64_t S, int64_t G, const double* dy, const double* x,
                         const double* mean, const double* mean_lo, const double* rstd, const double* gamma,
                         double* dx, double* dgamma, double* dbeta);

// ---- BatchNorm: x (N, C, L), statistics per channel over m = N L values ------------------------------
// Batch mean[C] (+ mean_lo) and biased variance var[C], on values shifted by the channel's first
// value. For L == 1 (the (N, C) layout) one pass of Welford's update down the rows, SIMD along C
// (mean += (d - mean) / k; M2 += (d - mean_old)(d - mean_new), d = x - x[0, c]): x is read once;
// in blocks of 64 rows, merged in double, so that the error does not grow with N. For L > 1 two
// passes over each channel's runs of L values, the runs' sums added in double. m == 0 gives 0, 0.
void batch_norm_stats(int64_t N, int64_t C, int64_t L, const float* x, float* mean, float* mean_lo, float* var);
void batch_norm_stats(int64_t N, int64_t C, int64_t L, const double* x, double* mean, double* mean_lo,
                      double* var);
// y = (x - mean_c) rstd_c gamma_c + beta_c: the training forward (batch statistics) and the eval
// forward (running statistics, rstd = 1 / sqrt(running_var + eps)) in one pass.
void batch_norm_normalize(int64_t N, int64_t C, int64_t L, const float* x, const float* mean,
                          const float* mean_lo, const float* rstd, const float* gamma, const float* beta, float* y);
void batch_norm_normalize(int64_t N, int64_t C, int64_t L, const double* x, const double* mean,
                          const double* mean_lo, const double* rstd, const double* gamma, const double* beta,
                          double* y);
// With xhat = (x - mean_c) rstd_c: dgamma[c] = sum(dy xhat), dbeta[c] = sum(dy) (sums over n, l in
// order), and dx:
//   training (mean, rstd are the batch's, so they depend on x):
//     dx = (gamma r / m) (m dy - sum(dy) - xhat sum(dy xhat))
//   eval (running statistics, constants): dx = dy gamma r.
void batch_norm_backward(int64_t N, int64_t C, int64_t L, const float* dy, const float* x, const float* mean,
                         const float* mean_lo, const float* rstd, const float* gamma, bool training, float* dx,
                         float* dgamma, float* dbeta);
void batch_norm_backward(int64_t N, int64_t C, int64_t L, const double* dy, const double* x,
                         const double* mean, const double* mean_lo, const double* rstd, const double* gamma,
                         bool training, double* dx, double* dgamma, double* dbeta);

// out = A_c a + B_c (x - mean_c) + G_c g + D_c for a, x, g, out (N, C, L), coef = [A | B | G | D |
// mean] (C each); a or g may be null (their terms dropped). The second sweep of BatchNorm's double
// backward, whose gradients are such per-channel combinations (autograd/norm_grad.cc).
void channel_combine(int64_t N, int64_t C, int64_t L, const float* a, const float* x, const float* g,
                     const float* coef, float* out);
void channel_combine(int64_t N, int64_t C, int64_t L, const double* a, const double* x, const double* g,
                     const double* coef, double* out);

// The name of the Highway target these kernels dispatch to now (e.g. "AVX2"), for tests.
const char* norm_active_target();

// ---- Scalar references: what the Highway kernels must compute -------------------------------------
// Plain loops with double accumulators (and double arithmetic for float data): the most accurate
// answer the formulas allow, so the SIMD kernels are checked against truth, not against themselves.
namespace ref {

// 1 / sqrt(var + eps) for a variance that rounding may have left a hair below 0.
// (var > 0 ? var : 0 is fmax(var, 0), NaN included, without a call into libm.)
inline double inv_std(double var, double eps) { return 1.0 / std::sqrt((var > 0 ? var : 0.0) + eps); }

// Stores a double mean as the pair mean[i] = T(mu), mean_lo[i] = T(mu - T(mu)) (mean_lo may be null).
template <typename T>
void store_mean(double mu, T* mean, T* mean_lo, int64_t i) {
  if (mean) mean[i] = static_cast<T>(mu);
  if (mean_lo) mean_lo[i] = static_cast<T>(mu - static_cast<double>(static_cast<T>(mu)));
}

// The mean of the pair at i, in double (mean_lo null: 0).
template <typename T>
double load_mean(const T* mean, const T* mean_lo, int64_t i) {
  return static_cast<double>(mean[i]) + (mean_lo ? static_cast<double>(mean_lo[i]) : 0.0);
}

// Mean and biased variance of n values, two passes in double.
template <typename T>
void moments(int64_t n, const T* x, double& mu, double& var) {
  double s = 0, ss = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j];
  mu = n ? s / n : 0;
  for (int64_t j = 0; j < n; ++j) ss += (x[j] - mu) * (x[j] - mu);
  var = n ? ss / n : 0;
}

template <typename T>
void layer_norm_forward(int64_t rows, int64_t n, const T* x, const T* gamma, const T* beta, double eps, T* y,
                        T* mean, T* mean_lo, T* rstd) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* xr = x + i * n;
    double mu, var;
    moments(n, xr, mu, var);
    const double r = inv_std(var, eps);
    for (int64_t j = 0; j < n; ++j)
      y[i * n + j] = static_cast<T>((xr[j] - mu) * r * (gamma ? gamma[j] : 1.0) + (beta ? beta[j] : 0.0));
    store_mean(mu, mean, mean_lo, i);
    if (rstd) rstd[i] = static_cast<T>(r);
  }
}

// LayerNorm's (center = true) and RMSNorm's (center = false, mean 0) backward on rows.
template <typename T>
void row_norm_backward(bool center, int64_t rows, int64_t n, const T* dy, const T* x, const T* mean,
                       const T* mean_lo, const T* rstd, const T* gamma, T* dx, T* dgamma, T* dbeta) {
  std::vector<double> dg(n, 0.0), db(n, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const double mu = center ? load_mean(mean, mean_lo, i) : 0.0, r = rstd[i];
    const T *xr = x + i * n, *dyr = dy + i * n;
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double xh = (xr[j] - mu) * r, g = dyr[j] * (gamma ? gamma[j] : 1.0);
      sg += g, sgx += g * xh;
      dg[j] += dyr[j] * xh, db[j] += dyr[j];
    }
    const double mg = center ? sg / n : 0.0, mgx = sgx / n;
    if (dx)
      for (int64_t j = 0; j < n; ++j) {
        const double xh = (xr[j] - mu) * r, g = dyr[j] * (gamma ? gamma[j] : 1.0);
        dx[i * n + j] = static_cast<T>(r * (g - mg - xh * mgx));
      }
  }
  for (int64_t j = 0; j < n; ++j) {
    if (dgamma) dgamma[j] = static_cast<T>(dg[j]);
    if (dbeta) dbeta[j] = static_cast<T>(db[j]);
  }
}

template <typename T>
void layer_norm_backward(int64_t rows, int64_t n, const T* dy, const T* x, const T* mean, const T* mean_lo,
                         const T* rstd, const T* gamma, T* dx, T* dgamma, T* dbeta) {
  row_norm_backward(true, rows, n, dy, x, mean, mean_lo, rstd, gamma, dx, dgamma, dbeta);
}

template <typename T>
void rms_norm_forward(int64_t rows, int64_t n, const T* x, const T* gamma, double eps, T* y, T* rstd) {
  for (int64_t i = 0; i < rows; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(x[i * n + j]) * x[i * n + j];
    const double r = inv_std(n ? ss / n : 0, eps);
    for (int64_t j = 0; j < n; ++j) y[i * n + j] = static_cast<T>(x[i * n + j] * r * (gamma ? gamma[j] : 1.0));
    if (rstd) rstd[i] = static_cast<T>(r);
  }
}

template <typename T>
void rms_norm_backward(int64_t rows, int64_t n, const T* dy, const T* x, const T* rstd, const T* gamma, T* dx,
                       T* dgamma) {
  row_norm_backward<T>(false, rows, n, dy, x, nullptr, nullptr, rstd, gamma, dx, dgamma, nullptr);
}

template <typename T>
void group_norm_forward(int64_t N, int64_t C, int64_t S, int64_t G, const T* x, const T* gamma, const T* beta,
                        double eps, T* y, T* mean, T* mean_lo, T* rstd) {
  const int64_t cg = C / G, n = cg * S;
  for (int64_t i = 0; i < N * G; ++i) {
    const T* xr = x + i * n;
    double mu, var;
    moments(n, xr, mu, var);
    const double r = inv_std(var, eps);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t c = (i % G) * cg + j / S;
      y[i * n + j] = static_cast<T>((xr[j] - mu) * r * (gamma ? gamma[c] : 1.0) + (beta ? beta[c] : 0.0));
    }
    store_mean(mu, mean, mean_lo, i);
    if (rstd) rstd[i] = static_cast<T>(r);
  }
}

template <typename T>
void group_norm_backward(int64_t N, int64_t C, int64_t S, int64_t G, const T* dy, const T* x, const T* mean,
                         const T* mean_lo, const T* rstd, const T* gamma, T* dx, T* dgamma, T* dbeta) {
  const int64_t cg = C / G, n = cg * S;
  std::vector<double> dg(C, 0.0), db(C, 0.0);
  for (int64_t i = 0; i < N * G; ++i) {
    const double mu = load_mean(mean, mean_lo, i), r = rstd[i];
    const T *xr = x + i * n, *dyr = dy + i * n;
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t c = (i % G) * cg + j / S;
      const double xh = (xr[j] - mu) * r, g = dyr[j] * (gamma ? gamma[c] : 1.0);
      sg += g, sgx += g * xh;
      dg[c] += dyr[j] * xh, db[c] += dyr[j];
    }
    if (dx)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t c = (i % G) * cg + j / S;
        const double xh = (xr[j] - mu) * r, g = dyr[j] * (gamma ? gamma[c] : 1.0);
        dx[i * n + j] = static_cast<T>(r * (g - sg / n - xh * sgx / n));
      }
  }
  for (int64_t c = 0; c < C; ++c) {
    if (dgamma) dgamma[c] = static_cast<T>(dg[c]);
    if (dbeta) dbeta[c] = static_cast<T>(db[c]);
  }
}

template <typename T>
void batch_norm_stats(int64_t N, int64_t C, int64_t L, const T* x, T* mean, T* mean_lo, T* var) {
  const int64_t m = N * L;
  std::vector<T> channel(m);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < N; ++i)
      for (int64_t l = 0; l < L; ++l) channel[i * L + l] = x[(i * C + c) * L + l];
    double mu, v;
    moments(m, channel.data(), mu, v);
    store_mean(mu, mean, mean_lo, c);
    var[c] = static_cast<T>(v);
  }
}

template <typename T>
void batch_norm_normalize(int64_t N, int64_t C, int64_t L, const T* x, const T* mean, const T* mean_lo,
                          const T* rstd, const T* gamma, const T* beta, T* y) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t l = 0; l < L; ++l) {
        const int64_t k = (i * C + c) * L + l;
        y[k] = static_cast<T>((x[k] - load_mean(mean, mean_lo, c)) * rstd[c] * (gamma ? gamma[c] : 1.0) +
                              (beta ? beta[c] : 0.0));
      }
}

template <typename T>
void batch_norm_backward(int64_t N, int64_t C, int64_t L, const T* dy, const T* x, const T* mean, const T* mean_lo,
                         const T* rstd, const T* gamma, bool training, T* dx, T* dgamma, T* dbeta) {
  const double m = static_cast<double>(N * L);
  for (int64_t c = 0; c < C; ++c) {
    const double mu = load_mean(mean, mean_lo, c), r = rstd[c], gm = gamma ? gamma[c] : 1.0;
    double sdy = 0, sdyxh = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t l = 0; l < L; ++l) {
        const int64_t k = (i * C + c) * L + l;
        sdy += dy[k], sdyxh += dy[k] * (x[k] - mu) * r;
      }
    if (dgamma) dgamma[c] = static_cast<T>(sdyxh);
    if (dbeta) dbeta[c] = static_cast<T>(sdy);
    if (!dx) continue;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t l = 0; l < L; ++l) {
        const int64_t k = (i * C + c) * L + l;
        const double xh = (x[k] - mu) * r;
        dx[k] = static_cast<T>(training ? gm * r / m * (m * dy[k] - sdy - xh * sdyxh) : dy[k] * gm * r);
      }
  }
}

template <typename T>
void channel_combine(int64_t N, int64_t C, int64_t L, const T* a, const T* x, const T* g, const T* coef, T* out) {
  const T *A = coef, *B = A + C, *G = B + C, *D = G + C, *mean = D + C;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t l = 0; l < L; ++l) {
        const int64_t k = (i * C + c) * L + l;
        out[k] = static_cast<T>((a ? static_cast<double>(A[c]) * a[k] : 0.0) +
                                static_cast<double>(B[c]) * (static_cast<double>(x[k]) - mean[c]) +
                                (g ? static_cast<double>(G[c]) * g[k] : 0.0) + D[c]);
      }
}

}  // namespace ref
}  // namespace normlab::autograd::kernels
