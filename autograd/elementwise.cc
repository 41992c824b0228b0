// Differentiable elementwise ops: each forward calls one kernel; its backward sits right below it.
#include "autograd/elementwise.h"

#include <algorithm>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/reduce.h"

namespace normlab::autograd {

namespace k = kernels;

namespace {

// The merged loop nest of out = a op b (see kernels::BroadcastPlan).
k::BroadcastPlan make_plan(const Shape& out, const Shape& a, const Shape& b, const char* op) {
  const size_t r = out.size();
  std::vector<int64_t> sz, sa, sb;
  const auto stra = contiguous_strides(a), strb = contiguous_strides(b);
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;  // size-1 dims add nothing to the loop
    const size_t ia = i + a.size() - r, ib = i + b.size() - r;
    const int64_t xa = (i < r - a.size() || a[ia] == 1) ? 0 : stra[ia];
    const int64_t xb = (i < r - b.size() || b[ib] == 1) ? 0 : strb[ib];
    if (!sz.empty() && sa.back() == xa * out[i] && sb.back() == xb * out[i]) {
      sz.back() *= out[i];  // merge with the previous dim
      sa.back() = xa;
      sb.back() = xb;
    } else {
      sz.push_back(out[i]);
      sa.push_back(xa);
      sb.push_back(xb);
    }
  }
  if (sz.empty()) sz = {1}, sa = {0}, sb = {0};
  if (sz.size() > static_cast<size_t>(k::kMaxDims))
    throw Error(std::string(op) + ": tensors with more than " + std::to_string(k::kMaxDims) +
                " non-mergeable dims are not supported (shape " + shape_str(out) + ")");
  k::BroadcastPlan p;
  p.rank = static_cast<int>(sz.size());
  for (int d = 0; d < p.rank; ++d) p.size[d] = sz[d], p.sa[d] = sa[d], p.sb[d] = sb[d];
  return p;
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    throw Error(std::string(op) + ": expected both tensors to have the same dtype, got " +
                dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
}

Tensor binary_forward(k::BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_dtype(a, b, name);
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = empty(out_shape, a.dtype());
  if (out.numel() == 0) return out;
  const k::BroadcastPlan p = make_plan(out_shape, a.shape(), b.shape(), name);
  dispatch(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::binary(op, p, a.data<T>(), b.data<T>(), out.data<T>());
  });
  return out;
}

Tensor unary_forward(k::UnaryOp op, const Tensor& x, double param = 0) {
  Tensor y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::unary(op, x.numel(), x.data<T>(), y.data<T>(), param);
  });
  return y;
}

// g * f'(v): the fused gradient kernel of an activation.
Tensor unary_grad(k::UnaryGradOp op, const Tensor& v, const Tensor& g, double param = 0) {
  Tensor dx = empty_like(v);
  dispatch(v.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::unary_grad(op, v.numel(), v.data<T>(), g.data<T>(), dx.data<T>(), param);
  });
  return dx;
}

using Grads = std::vector<Tensor>;

}  // namespace

// ---- Binary ops ---------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(k::BinaryOp::Add, a, b, "add");
  return record("AddBackward0", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, const Needs& n) {
    return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g, sb) : Tensor()};
  }, Backward::Differentiable);
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(k::BinaryOp::Sub, a, b, "sub");
  return record("SubBackward0", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, const Needs& n) {
    return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(neg(g), sb) : Tensor()};
  }, Backward::Differentiable);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(k::BinaryOp::Mul, a, b, "mul");
  // d(ab)/da = b, d(ab)/db = a: a is saved only if b needs a gradient, and b only if a does.
  return record("MulBackward0", out, {a, b},
                [a = b.requires_grad() ? saved(a) : Tensor(), b = a.requires_grad() ? saved(b) : Tensor(),
                 sa = a.shape(), sb = b.shape()](const Tensor& g, const Needs& n) {
    return Grads{n[0] ? sum_to(mul(g, b), sa) : Tensor(), n[1] ? sum_to(mul(g, a), sb) : Tensor()};
  }, Backward::Differentiable);
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(k::BinaryOp::Div, a, b, "div");
  // d(a/b)/da = 1/b, d(a/b)/db = -a/b^2: a is saved only if b needs a gradient.
  return record("DivBackward0", out, {a, b},
                [a = b.requires_grad() ? saved(a) : Tensor(), b = saved(b), sa = a.shape()](const Tensor& g, const Needs& n) {
    Tensor gb;
    if (n[1]) gb = sum_to(neg(div(mul(g, a), mul(b, b))), b.shape());
    return Grads{n[0] ? sum_to(div(g, b), sa) : Tensor(), gb};
  }, Backward::Differentiable);
}

Tensor add(const Tensor& a, double s) { return add(a, scalar(s, a.dtype())); }
Tensor sub(const Tensor& a, double s) { return sub(a, scalar(s, a.dtype())); }
Tensor mul(const Tensor& a, double s) {
  Tensor out = unary_forward(k::UnaryOp::Scale, a, s);
  return record("MulBackward0", out, {a}, [s](const Tensor& g, const Needs&) { return Grads{mul(g, s)}; }, Backward::Differentiable);
}
// a * (1/s), as PyTorch's div by a scalar does.
Tensor div(const Tensor& a, double s) { return renamed(mul(a, 1.0 / s), "DivBackward0"); }
Tensor rsub(double s, const Tensor& a) { return renamed(sub(scalar(s, a.dtype()), a), "RsubBackward1"); }
Tensor rdiv(double s, const Tensor& a) { return div(scalar(s, a.dtype()), a); }

// ---- Unary ops ----------------------------------------------------------------------------------

Tensor neg(const Tensor& x) {
  Tensor y = unary_forward(k::UnaryOp::Neg, x);
  return record("NegBackward0", y, {x}, [](const Tensor& g, const Needs&) { return Grads{neg(g)}; }, Backward::Differentiable);
}

Tensor exp(const Tensor& x) {
  Tensor y = unary_forward(k::UnaryOp::Exp, x);
  // d e^x = e^x: reuse the output
  return record("ExpBackward0", y, {x}, [y = saved_output(y)](const Tensor& g, const Needs&) {
    return Grads{mul(g, reattached(y))};
  }, Backward::Differentiable);
}

Tensor log(const Tensor& x) {
  Tensor y = unary_forward(k::UnaryOp::Log, x);
  return record("LogBackward0", y, {x}, [x = saved(x)](const Tensor& g, const Needs&) { return Grads{div(g, x)}; }, Backward::Differentiable);
}

Tensor sqrt(const Tensor& x) {
  Tensor y = unary_forward(k::UnaryOp::Sqrt, x);
  // d sqrt(x) = 1 / (2 sqrt(x))
  return record("SqrtBackward0", y, {x}, [y = saved_output(y)](const Tensor& g, const Needs&) {
    return Grads{div(g, mul(reattached(y), 2.0))};
  }, Backward::Differentiable);
}

Tensor relu(const Tensor& x) {
  Tensor y = unary_forward(k::UnaryOp::Relu, x);
  return record("ReluBackward0", y, {x}, [x = saved(x)](const Tensor& g, const Needs&) {
    // Under grad mode (a create_graph pass): g * [x > 0], the step a constant (relu'' = 0).
    if (grad_enabled()) return Grads{mul(g, unary_grad(k::UnaryGradOp::Relu, x, ones_like(x)))};
    return Grads{unary_grad(k::UnaryGradOp::Relu, x, g)};
  }, Backward::Differentiable);
}

Tensor tanh(const Tensor& x) {
  Tensor y = unary_forward(k::UnaryOp::Tanh, x);
  return record("TanhBackward0", y, {x}, [y = saved_output(y)](const Tensor& g, const Needs&) {
    if (grad_enabled()) {  // g (1 - y^2), recorded
      const Tensor yy = reattached(y);
      return Grads{mul(g, rsub(1, mul(yy, yy)))};
    }
    return Grads{unary_grad(k::UnaryGradOp::Tanh, y, g)};
  }, Backward::Differentiable);
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = unary_forward(k::UnaryOp::Sigmoid, x);
  return record("SigmoidBackward0", y, {x}, [y = saved_output(y)](const Tensor& g, const Needs&) {
    if (grad_enabled()) {  // g y (1 - y), recorded
      const Tensor yy = reattached(y);
      return Grads{mul(g, mul(yy, rsub(1, yy)))};
    }
    return Grads{unary_grad(k::UnaryGradOp::Sigmoid, y, g)};
  }, Backward::Differentiable);
}

// gelu'(x) of the tanh approximation gelu(x) = x s, s = (1 + tanh(u)) / 2, u = c (x + a x^3):
//   gelu'(x) = s + x (1 - t^2) c (1 + 3 a x^2) / 2,  t = tanh(u),
// composed of recorded ops, so it can be differentiated again (for a create_graph backward).
Tensor gelu_derivative(const Tensor& x) {
  const Tensor x2 = mul(x, x);
  const Tensor t = tanh(mul(add(x, mul(mul(x2, x), k::ref::kGeluA)), k::ref::kGeluC));
  const Tensor s = mul(add(t, 1.0), 0.5);
  return add(s, mul(mul(x, rsub(1, mul(t, t))), mul(add(mul(x2, 3 * k::ref::kGeluA), 1.0), 0.5 * k::ref::kGeluC)));
}

// The forward keeps the derivative gelu'(x) for the backward when it will run one
// (kernels::gelu_forward), which is then one multiply: no exp, no division, the same bits as
// computing it again.
Tensor gelu(const Tensor& x) {
  if (!should_record({x})) return unary_forward(k::UnaryOp::Gelu, x);
  Tensor y = empty_like(x), dydx = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::gelu_forward(x.numel(), x.data<T>(), y.data<T>(), dydx.data<T>());
  });
  return record("GeluBackward0", y, {x}, [x = saved(x), dydx](const Tensor& g, const Needs&) {
    if (grad_enabled()) return Grads{mul(g, gelu_derivative(x))};
    Tensor dx = empty_like(dydx);
    const k::BroadcastPlan p = make_plan(dydx.shape(), dydx.shape(), dydx.shape(), "gelu");
    dispatch(dydx.dtype(), [&](auto zero) {
      using T = decltype(zero);
      k::binary(k::BinaryOp::Mul, p, g.data<T>(), dydx.data<T>(), dx.data<T>());
    });
    return Grads{dx};
  }, Backward::Differentiable);
}

Tensor pow(const Tensor& x, double p) {
  Tensor y = unary_forward(k::UnaryOp::Pow, x, p);
  // d x^p = p x^(p-1); for p = 0 the gradient is 0 everywhere (also at x = 0, as in PyTorch)
  return record("PowBackward0", y, {x}, [x = saved(x), p](const Tensor& g, const Needs&) {
    if (p == 0) return Grads{zeros_like(x)};
    if (grad_enabled()) return Grads{mul(g, p == 1 ? ones_like(x) : mul(pow(x, p - 1), p))};  // recorded
    return Grads{unary_grad(k::UnaryGradOp::Pow, x, g, p)};
  }, Backward::Differentiable);
}

Tensor square(const Tensor& x) { return pow(x, 2); }

// ---- In place -----------------------------------------------------------------------------------

void add_(const Tensor& a, const Tensor& b, double alpha) {
  check_inplace(a, "add_");
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    throw Error("add_: expected a tensor of shape " + shape_str(a.shape()) + " and dtype " +
                dtype_name(a.dtype()) + ", got " + shape_str(b.shape()) + " " + dtype_name(b.dtype()));
  dispatch(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::axpy(a.numel(), alpha, b.data<T>(), a.data<T>());
  });
}

void mul_(const Tensor& a, double s) {
  check_inplace(a, "mul_");
  dispatch(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::unary(k::UnaryOp::Scale, a.numel(), a.data<T>(), a.data<T>(), s);
  });
}

}  // namespace normlab::autograd
