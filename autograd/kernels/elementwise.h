// Elementwise kernels (public header, no SIMD types): broadcast binary ops (arithmetic and equality),
// unary ops and their fused gradients, axpy, fill. Highway bodies in elementwise-inl.h, dispatch in
// elementwise.cc; the scalar references in namespace ref below define what every SIMD target must
// compute.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace normlab::autograd::kernels {

// Eq gives 1 where a == b, else 0 (so 0 where either is NaN): the mask of max's backward.
enum class BinaryOp : int { Add, Sub, Mul, Div, Eq };
// param is the exponent for Pow and the factor for Scale.
enum class UnaryOp : int { Neg, Exp, Log, Sqrt, Relu, Tanh, Sigmoid, Gelu, Pow, Scale };
// dx = g * f'(.): Relu, Gelu and Pow read x; Tanh and Sigmoid read the forward output y.
enum class UnaryGradOp : int { Relu, Gelu, Tanh, Sigmoid, Pow };

constexpr int kMaxDims = 8;

// The loop nest of a broadcast binary op: out has `rank` dims of sizes size[], a and b are read
// with element strides sa[], sb[] (0 along a broadcast dim). Built by make_broadcast_plan, which
// merges adjacent dims so that the common case is one flat loop.
struct BroadcastPlan {
  int rank = 0;
  int64_t size[kMaxDims] = {};
  int64_t sa[kMaxDims] = {};
  int64_t sb[kMaxDims] = {};
};

// out[i] = a[i] op b[i] over the plan (out may alias a or b when it has a's or b's shape).
void binary(BinaryOp op, const BroadcastPlan& p, const float* a, const float* b, float* out);
void binary(BinaryOp op, const BroadcastPlan& p, const double* a, const double* b, double* out);
// y[i] = f(x[i]) for i < n (y may alias x).
void unary(UnaryOp op, int64_t n, const float* x, float* y, double param = 0);
void unary(UnaryOp op, int64_t n, const double* x, double* y, double param = 0);
// dx[i] = g[i] * f'(xy[i]) for i < n, xy being x or y as the op says.
void unary_grad(UnaryGradOp op, int64_t n, const float* xy, const float* g, float* dx, double param = 0);
void unary_grad(UnaryGradOp op, int64_t n, const double* xy, const double* g, double* dx, double param = 0);
// y[i] += alpha * x[i] for i < n.
void axpy(int64_t n, double alpha, const float* x, float* y);
void axpy(int64_t n, double alpha, const double* x, double* y);
// out[i] = value for i < n, on the calling thread (for the rows of a larger job: a convolution's
// bias, a broadcast's repeated element). GCC's -O2 leaves std::fill of a float as a scalar loop.
void fill(int64_t n, float value, float* out);
void fill(int64_t n, double value, double* out);
// GELU (tanh form) and its derivative, for a backward that is one multiply: with
// s = sigmoid(2 u_i) = 0.5 (1 + tanh(u_i)), u = c (x + a x^3):
//   y[i] = x[i] s (the same bits as unary(UnaryOp::Gelu)),
//   dydx[i] = s + 2 x s (1 - s) c (1 + 3 a x^2), so that g[i] dydx[i] is
//   unary_grad(UnaryGradOp::Gelu)'s dx (which computes s again: an exp and a division per element).
void gelu_forward(int64_t n, const float* x, float* y, float* dydx);
void gelu_forward(int64_t n, const double* x, double* y, double* dydx);

// ---- Scalar references: what the Highway kernels must compute -----------------------------------
namespace ref {

constexpr double kGeluC = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluA = 0.044715;

template <typename T>
T binary_op(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Eq: return a == b ? T(1) : T(0);
  }
  return 0;
}

template <typename T>
T unary_op(UnaryOp op, T x, double p) {
  switch (op) {
    case UnaryOp::Neg: return -x;
    case UnaryOp::Exp: return std::exp(x);
    case UnaryOp::Log: return std::log(x);
    case UnaryOp::Sqrt: return std::sqrt(x);
    case UnaryOp::Relu: return x < 0 ? T(0) : x;
    case UnaryOp::Tanh: return std::tanh(x);
    case UnaryOp::Sigmoid: return T(1) / (T(1) + std::exp(-x));
    // GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    case UnaryOp::Gelu: return T(0.5) * x * (T(1) + std::tanh(T(kGeluC) * (x + T(kGeluA) * x * x * x)));
    case UnaryOp::Pow: return std::pow(x, static_cast<T>(p));
    case UnaryOp::Scale: return x * static_cast<T>(p);
  }
  return 0;
}

template <typename T>
T unary_grad_op(UnaryGradOp op, T v, T g, double p) {
  switch (op) {
    case UnaryGradOp::Relu: return v > 0 ? g : T(0);
    case UnaryGradOp::Gelu: {
      // d/dx 0.5 x (1 + t), t = tanh(u), u = c (x + a x^3):
      // 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)
      const T t = std::tanh(T(kGeluC) * (v + T(kGeluA) * v * v * v));
      return g * (T(0.5) * (T(1) + t) +
                  T(0.5) * v * (T(1) - t * t) * T(kGeluC) * (T(1) + T(3 * kGeluA) * v * v));
    }
    case UnaryGradOp::Tanh: return g * (T(1) - v * v);
    case UnaryGradOp::Sigmoid: return g * v * (T(1) - v);
    case UnaryGradOp::Pow: return g * static_cast<T>(p) * std::pow(v, static_cast<T>(p - 1));
  }
  return 0;
}

template <typename T>
void gelu_forward(int64_t n, const T* x, T* y, T* dydx) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T s = T(0.5) * (T(1) + std::tanh(T(kGeluC) * (v + T(kGeluA) * v * v * v)));
    y[i] = v * s;
    dydx[i] = s + T(2) * v * s * (T(1) - s) * T(kGeluC) * (T(1) + T(3 * kGeluA) * v * v);
  }
}

template <typename T>
void binary(BinaryOp op, const BroadcastPlan& p, const T* a, const T* b, T* out) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.size[d];
  int64_t idx[kMaxDims] = {};
  for (int64_t i = 0; i < total; ++i) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < p.rank; ++d) oa += idx[d] * p.sa[d], ob += idx[d] * p.sb[d];
    out[i] = binary_op(op, a[oa], b[ob]);
    for (int d = p.rank - 1; d >= 0 && ++idx[d] == p.size[d]; --d) idx[d] = 0;
  }
}

template <typename T>
void unary(UnaryOp op, int64_t n, const T* x, T* y, double p) {
  for (int64_t i = 0; i < n; ++i) y[i] = unary_op(op, x[i], p);
}

template <typename T>
void unary_grad(UnaryGradOp op, int64_t n, const T* v, const T* g, T* dx, double p) {
  for (int64_t i = 0; i < n; ++i) dx[i] = unary_grad_op(op, v[i], g[i], p);
}

template <typename T>
void axpy(int64_t n, double alpha, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += static_cast<T>(alpha) * x[i];
}

}  // namespace ref
}  // namespace normlab::autograd::kernels
