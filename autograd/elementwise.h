// Differentiable elementwise ops with NumPy/PyTorch broadcasting, and in-place helpers.
#pragma once
#include "autograd/tensor.h"

namespace normlab::autograd {

/// a + b, a - b, a * b, a / b with broadcasting; both tensors must have the same dtype.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);  ///< a - b (broadcasting).
Tensor mul(const Tensor& a, const Tensor& b);  ///< a * b (broadcasting).
Tensor div(const Tensor& a, const Tensor& b);  ///< a / b (broadcasting).
/// With a scalar (of the tensor's dtype).
Tensor add(const Tensor& a, double s);
Tensor sub(const Tensor& a, double s);  ///< a - s.
Tensor mul(const Tensor& a, double s);  ///< a * s.
Tensor div(const Tensor& a, double s);  ///< a / s.
Tensor rsub(double s, const Tensor& a);  ///< s - a
Tensor rdiv(double s, const Tensor& a);  ///< s / a

Tensor neg(const Tensor& x);  ///< -x.
Tensor exp(const Tensor& x);  ///< e^x.
Tensor log(const Tensor& x);  ///< Natural logarithm.
Tensor sqrt(const Tensor& x);  ///< Square root.
Tensor relu(const Tensor& x);  ///< max(x, 0).
Tensor tanh(const Tensor& x);  ///< Hyperbolic tangent.
Tensor sigmoid(const Tensor& x);  ///< 1 / (1 + e^-x).
/// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor& x);
/// gelu'(x) of gelu's tanh approximation, of recorded ops (differentiable again): the factor of a
/// create_graph backward through gelu.
Tensor gelu_derivative(const Tensor& x);
/// x ** p for a scalar exponent.
Tensor pow(const Tensor& x, double p);
/// x * x.
Tensor square(const Tensor& x);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }  ///< add(a, b).
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }  ///< sub(a, b).
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }  ///< mul(a, b).
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }  ///< div(a, b).
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }  ///< add(a, s).
inline Tensor operator-(const Tensor& a, double s) { return sub(a, s); }  ///< sub(a, s).
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }  ///< mul(a, s).
inline Tensor operator/(const Tensor& a, double s) { return div(a, s); }  ///< div(a, s).
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }  ///< add(a, s).
inline Tensor operator-(double s, const Tensor& a) { return rsub(s, a); }  ///< rsub(s, a): s - a.
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }  ///< mul(a, s).
inline Tensor operator/(double s, const Tensor& a) { return rdiv(s, a); }  ///< rdiv(s, a): s / a.
inline Tensor operator-(const Tensor& x) { return neg(x); }  ///< neg(x).

// ---- In place, not recorded (optimizers, gradient accumulation) --------------------------------

/// a += alpha * b; b must have a's shape and dtype.
void add_(const Tensor& a, const Tensor& b, double alpha = 1);
/// a *= s.
void mul_(const Tensor& a, double s);

}  // namespace normlab::autograd
