// Softmax row kernels (public header, no SIMD types): the fused softmax + cross-entropy forward over
// the rows of logits and its backward. Highway bodies in softmax-inl.h, dispatch in softmax.cc; the
// scalar references in namespace ref below define what every SIMD target must compute.
//
// Per row i of x (rows, c), in double whatever T is:
//   m = max_j x_ij,  s = sum_j e^(x_ij - m),  p_ij = e^(x_ij - m) / s,  log p_ij = x_ij - m - log s.
// The shift by m keeps every exponent <= 0 (no overflow) and the largest term is 1 (s >= 1, so
// log s is well conditioned). A row holding a NaN or +inf, or only -inf, has no finite m: its p
// and its loss are NaN (as with std::exp, PyTorch). Rows are computed one after the other on the
// calling thread, and the loss is summed in row order, so results do not depend on the thread
// count; the order of the sum within a row depends on the target only.
#pragma once
#include <cmath>
#include <cstdint>

namespace normlab::autograd::kernels {

// p = softmax(x) along each row, x and p (rows, c); with target (rows class indices in [0, c)),
// returns sum_i -log p[i, target[i]] (the cross-entropy summed over rows), else 0. p must not
// alias x.
double cross_entropy_forward(int64_t rows, int64_t c, const float* x, const int64_t* target, float* p);
double cross_entropy_forward(int64_t rows, int64_t c, const double* x, const int64_t* target, double* p);
// dx = (p - onehot(target)) * scale, p and dx (rows, c); scale is d loss / d (summed loss), e.g.
// g / N for the mean. dx must not alias p.
void cross_entropy_backward(int64_t rows, int64_t c, const float* p, const int64_t* target, double scale, float* dx);
void cross_entropy_backward(int64_t rows, int64_t c, const double* p, const int64_t* target, double scale,
                            double* dx);

// ---- Scalar references: what the Highway kernels must compute -----------------------------------
namespace ref {

template <typename T>
double cross_entropy_forward(int64_t rows, int64_t c, const T* x, const int64_t* target, T* p) {
  double acc = 0;
  for (int64_t i = 0; i < rows && c > 0; ++i) {
    const T* xi = x + i * c;
    T* pi = p + i * c;
    T m = xi[0];
    for (int64_t j = 1; j < c; ++j) m = xi[j] > m ? xi[j] : m;
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) {
      const double e = std::exp(static_cast<double>(xi[j]) - m);  // NaN for NaN, inf - inf
      pi[j] = static_cast<T>(e);  // p_ij = e_ij / s, scaled below
      sum += e;
    }
    const double log_s = std::log(sum), inv_s = 1 / sum;
    // (float: e rounded to float, then times 1/s in double, rounded once more)
    for (int64_t j = 0; j < c; ++j) pi[j] = static_cast<T>(static_cast<double>(pi[j]) * inv_s);
    if (target) acc -= static_cast<double>(xi[target[i]]) - m - log_s;
  }
  return acc;
}

template <typename T>
void cross_entropy_backward(int64_t rows, int64_t c, const T* p, const int64_t* target, double scale, T* dx) {
  const T s = static_cast<T>(scale);
  for (int64_t i = 0; i < rows * c; ++i) dx[i] = p[i] * s;
  for (int64_t i = 0; i < rows; ++i) dx[i * c + target[i]] = (p[i * c + target[i]] - 1) * s;
}

}  // namespace ref
}  // namespace normlab::autograd::kernels
