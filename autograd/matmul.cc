// Differentiable matrix products: forward and backward side by side, all through kernels::gemm.
#include "autograd/matmul.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/reduce.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace k = kernels;
using Grads = std::vector<Tensor>;

namespace {

std::string mat_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r + ")";
}

template <typename T>
void run_gemm(const k::GemmShape& s, const Tensor& a, int64_t oa, const Tensor& b, int64_t ob, const Tensor& c,
              int64_t oc) {
  k::gemm(s, a.data<T>() + oa, b.data<T>() + ob, c.data<T>() + oc);
}

// C = op(A) op(B) on the matrices at element offsets oa, ob, oc (s.batch of them). A call with no
// batch item leaves C as it is (the callers zero an operand's gradient before summing into it).
void gemm(const k::GemmShape& s, const Tensor& a, int64_t oa, const Tensor& b, int64_t ob, const Tensor& c,
          int64_t oc) {
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  if (a.dtype() == DType::Float32) run_gemm<float>(s, a, oa, b, ob, c, oc);
  else run_gemm<double>(s, a, oa, b, ob, c, oc);
}

// The same on whole tensors (linear's products).
void gemm(const k::GemmShape& s, const Tensor& a, const Tensor& b, const Tensor& c) {
  if (c.numel() == 0) return;
  gemm(s, a, 0, b, 0, c, 0);
}

// How a broadcast batched product walks its batch dims. The output's batch dims (the broadcast of
// both operands' leading dims) are split into an outer part, walked one index at a time, and the
// longest inner suffix over which each operand is either fully present or fully broadcast: one
// kernel call covers the inner part, with stride M K (present) or 0 (broadcast) for each operand.
struct BatchPlan {
  Shape outer;                           // the outer batch dims (row-major)
  std::vector<int64_t> outer_a, outer_b;  // per outer dim: the step of A's (B's) matrix, 0 if broadcast
  int64_t inner = 1;                     // matrices in one kernel call
  bool inner_a = false, inner_b = false;  // is A (B) present (not broadcast) over the inner dims?
  int64_t count() const { return numel(outer); }
  // Matrix offsets (in matrices, not elements) of outer index q in A and B.
  void offsets(int64_t q, int64_t* oa, int64_t* ob) const {
    *oa = *ob = 0;
    for (size_t d = outer.size(); d-- > 0;) {
      const int64_t i = q % outer[d];
      q /= outer[d];
      *oa += i * outer_a[d];
      *ob += i * outer_b[d];
    }
  }
};

// Plans the walk over batch dims bs of the output, with the operands' batch dims ba and bb
// (each padded on the left with 1s to bs's rank).
BatchPlan plan_batches(const Shape& bs, Shape ba, Shape bb) {
  const size_t r = bs.size();
  const Shape ones(r, 1);
  ba.insert(ba.begin(), ones.begin(), ones.begin() + static_cast<std::ptrdiff_t>(r - ba.size()));
  bb.insert(bb.begin(), ones.begin(), ones.begin() + static_cast<std::ptrdiff_t>(r - bb.size()));
  BatchPlan p;
  // The inner suffix: dims of size 1 fit any suffix; the first other dim sets whether each operand
  // is present, and the suffix stops at the first dim that disagrees.
  size_t split = r;
  bool set = false;
  for (size_t d = r; d-- > 0;) {
    if (bs[d] == 1) {
      split = d;
      continue;
    }
    const bool pa = ba[d] != 1, pb = bb[d] != 1;
    if (!set) p.inner_a = pa, p.inner_b = pb, set = true;
    else if (pa != p.inner_a || pb != p.inner_b) break;
    p.inner *= bs[d];
    split = d;
  }
  // The step of each outer dim, in matrices: the product of the operand's own batch sizes after it.
  int64_t step_a = p.inner_a ? p.inner : 1, step_b = p.inner_b ? p.inner : 1;
  p.outer.assign(bs.begin(), bs.begin() + static_cast<std::ptrdiff_t>(split));
  p.outer_a.assign(split, 0);
  p.outer_b.assign(split, 0);
  for (size_t d = split; d-- > 0;) {
    p.outer_a[d] = ba[d] == 1 ? 0 : step_a;
    p.outer_b[d] = bb[d] == 1 ? 0 : step_b;
    step_a *= ba[d];
    step_b *= bb[d];
  }
  return p;
}

// Which matrices of a batched product an operand of a kernel call is: A's, B's or the output's
// (the output, and its gradient, have one matrix per batch index).
enum class Role { A, B, Out };

// Z = op(X) op(Y) (+ Z) for every outer batch index of the plan, each call covering the inner
// batches; sx, sy, sz are the operands' matrix sizes in elements.
void gemm_batches(const BatchPlan& p, const k::GemmShape& s, const Tensor& x, Role rx, int64_t sx, const Tensor& y,
                  Role ry, int64_t sy, const Tensor& z, Role rz, int64_t sz) {
  for (int64_t q = 0, nq = p.count(); q < nq; ++q) {
    int64_t oa, ob;
    p.offsets(q, &oa, &ob);
    const auto at = [&](Role r) { return r == Role::A ? oa : r == Role::B ? ob : q * p.inner; };
    gemm(s, x, at(rx) * sx, y, at(ry) * sy, z, at(rz) * sz);
  }
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const auto fail = [&](const std::string& why) {
    throw Error("matmul: shapes " + mat_str(a.shape()) + " and " + mat_str(b.shape()) + " cannot be multiplied (" +
                why + ")");
  };
  if (a.dtype() != b.dtype())
    throw Error("matmul: expected both tensors to have the same dtype, got " + dtype_name(a.dtype()) + " and " +
                dtype_name(b.dtype()));
  if (a.dim() < 2 || b.dim() < 2)
    throw Error("matmul: expected tensors of rank 2 or more (matrices, or batches of them), got shapes " +
                mat_str(a.shape()) + " and " + mat_str(b.shape()));
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K)
    fail("the first has " + std::to_string(K) + " columns, the second " + std::to_string(b.size(-2)) + " rows");
  // Batch dims broadcast as elementwise ops do (NumPy rules): (2, 1) with (5) gives (2, 5).
  const Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape bs;
  try {
    bs = broadcast_shapes(ba, bb, "matmul");
  } catch (const Error&) {
    fail("batch dims " + shape_str(ba) + " and " + shape_str(bb) + " do not broadcast");
  }
  Shape os = bs;
  os.push_back(M);
  os.push_back(N);
  Tensor out = empty(os, a.dtype());
  const BatchPlan plan = plan_batches(bs, ba, bb);
  // C_q (M, N) = A_q (M, K) B_q (K, N) for every batch index q: one kernel call per outer index.
  k::GemmShape s;
  s.m = M, s.n = N, s.k = K, s.batch = plan.inner;
  s.stride_a = plan.inner_a ? M * K : 0;
  s.stride_b = plan.inner_b ? K * N : 0;
  s.stride_c = M * N;
  if (out.numel() > 0) gemm_batches(plan, s, a, Role::A, M * K, b, Role::B, K * N, out, Role::Out, M * N);
  // Over broadcast batch dims an operand's gradient is the sum of the gradients of its uses, in
  // batch order (outer index, then inner, accumulated by the kernel) onto zeros. An operand with a
  // matrix for every batch index (as many as the output) gets each gradient once, written directly.
  const bool full_a = numel(ba) == numel(bs), full_b = numel(bb) == numel(bs);
  // Saves A only if B needs a gradient, and B only if A does.
  const bool mm = a.dim() == 2 && b.dim() == 2;
  return record(mm ? "MmBackward0" : "BmmBackward0", out, {a, b},
                [a = b.requires_grad() ? saved(a) : Tensor(), b = a.requires_grad() ? saved(b) : Tensor(),
                 sa = a.shape(), sb = b.shape(), dt = a.dtype(), s, plan, full_a, full_b](const Tensor& g, const Needs& n) {
    Tensor ga, gb;
    if (grad_enabled()) {  // a create_graph pass: the same products, recorded
      if (n[0]) ga = sum_to(matmul(g, transpose(b, -1, -2)), sa);
      if (n[1]) gb = sum_to(matmul(transpose(a, -1, -2), g), sb);
      return Grads{ga, gb};
    }
    if (n[0]) {  // dA = dC B^T: (M, N) (N, K)
      ga = empty(sa, dt);
      if (!full_a) fill_(ga, 0);
      k::GemmShape t;
      t.trans_b = true, t.m = s.m, t.n = s.k, t.k = s.n, t.batch = s.batch, t.accumulate = !full_a;
      t.stride_a = s.stride_c, t.stride_b = s.stride_b, t.stride_c = s.stride_a;
      if (ga.numel() > 0)
        gemm_batches(plan, t, g, Role::Out, s.m * s.n, b, Role::B, s.k * s.n, ga, Role::A, s.m * s.k);
    }
    if (n[1]) {  // dB = A^T dC: (K, M) (M, N)
      gb = empty(sb, dt);
      if (!full_b) fill_(gb, 0);
      k::GemmShape t;
      t.trans_a = true, t.m = s.k, t.n = s.n, t.k = s.m, t.batch = s.batch, t.accumulate = !full_b;
      t.stride_a = s.stride_a, t.stride_b = s.stride_c, t.stride_c = s.stride_b;
      if (gb.numel() > 0)
        gemm_batches(plan, t, a, Role::A, s.m * s.k, g, Role::Out, s.m * s.n, gb, Role::B, s.k * s.n);
    }
    return Grads{ga, gb};
  }, Backward::Differentiable);
}

namespace {

// What linear_impl fuses into the product: the input through GELU first, and a residual added to y.
struct LinearFusion {
  bool gelu_input = false;
  Tensor residual;
};

const void* data_ptr(const Tensor& t) {
  return t.dtype() == DType::Float32 ? static_cast<const void*>(t.data<float>())
                                     : static_cast<const void*>(t.data<double>());
}

void check_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.dim() != 2) throw Error("linear: the weight must be 2-D (out, in), got shape " + shape_str(weight.shape()));
  const int64_t in_f = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != in_f)
    throw Error("linear: expected input with " + std::to_string(in_f) + " features in its last dim, got shape " +
                shape_str(x.shape()) + " (weight " + shape_str(weight.shape()) + ")");
  if (x.dtype() != weight.dtype() || (bias.defined() && bias.dtype() != x.dtype()))
    throw Error("linear: input, weight and bias must have the same dtype, got input " + dtype_name(x.dtype()) +
                ", weight " + dtype_name(weight.dtype()) +
                (bias.defined() ? ", bias " + dtype_name(bias.dtype()) : std::string()));
  if (bias.defined() && bias.shape() != Shape{weight.size(0)})
    throw Error("linear: expected a bias of shape " + shape_str({weight.size(0)}) + ", got " + shape_str(bias.shape()));
}

// a = gelu(x) (the product's input) and, when the backward will need it, dadx = gelu'(x).
std::pair<Tensor, Tensor> gelu_with_derivative(const Tensor& x, bool keep_derivative) {
  Tensor a = empty_like(x), dadx = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (keep_derivative) k::gelu_forward(x.numel(), x.data<T>(), a.data<T>(), dadx.data<T>());
    else k::unary(k::UnaryOp::Gelu, x.numel(), x.data<T>(), a.data<T>());
  });
  return {a, keep_derivative ? dadx : Tensor()};
}

// linear_impl's gradients in a create_graph pass, of recorded ops: with g2 = dy as (rows, out),
//   dx = (g2 W) [* gelu'(x)],  dW = g2^T act(x),  db = sum of g2 over rows,  d residual = dy.
// x is defined for a GELU input (act(x) = gelu(x), computed again so that it is differentiated);
// otherwise act(x) = a, the input itself.
Grads linear_grads_recorded(const Tensor& g, const Tensor& a, const Tensor& w, const Tensor& x, const Shape& xs,
                            int64_t rows, const Needs& n) {
  const Tensor g2 = reshape(g, {rows, g.dim() == 0 ? 1 : g.size(-1)});
  Tensor gx, gw, gb;
  if (n[0]) {
    gx = reshape(matmul(g2, w), xs);
    if (x.defined()) gx = mul(gx, gelu_derivative(x));
  }
  if (n[1]) {
    const Tensor act = x.defined() ? gelu(x) : a;
    gw = matmul(transpose(g2, 0, 1), reshape(act, {rows, act.dim() == 0 ? 1 : act.size(-1)}));
  }
  if (n[2]) gb = sum(g2, {0}, false);
  return Grads{gx, gw, gb, n[3] ? g : Tensor()};
}

// y = [residual +] act(x) W^T + b, act = GELU or the identity. The residual is added where the
// GEMM stores y, and with GELU the backward's dx = (dy W) * gelu'(x) is one GEMM whose stores
// multiply (kernels/gemm.h's epilogue): no pass of their own over y or dx.
Tensor linear_impl(const Tensor& x, const Tensor& weight, const Tensor& bias, const LinearFusion& f) {
  check_linear(x, weight, bias);
  const int64_t out_f = weight.size(0), in_f = weight.size(1);
  int64_t rows = 1;  // the product of x's leading dims (x.numel() / in_f, unless in_f is 0)
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  Shape os = x.shape();
  os.back() = out_f;
  const Tensor& res = f.residual;
  if (res.defined() && (res.shape() != os || res.dtype() != x.dtype()))
    throw Error("linear: expected a residual of shape " + shape_str(os) + " and dtype " + dtype_name(x.dtype()) +
                ", got " + shape_str(res.shape()) + " " + dtype_name(res.dtype()));
  const bool record_x = should_record({x});  // the backward will want dx
  const std::pair<Tensor, Tensor> act = f.gelu_input ? gelu_with_derivative(x, record_x) : std::pair{x, Tensor()};
  const Tensor &a = act.first, &dadx = act.second;
  Tensor out = empty(os, x.dtype());
  // y (rows, out) = a (rows, in) W^T, + b on every row (added by the GEMM where it stores y).
  k::GemmShape s;
  s.trans_b = true, s.m = rows, s.n = out_f, s.k = in_f;
  if (bias.defined()) s.bias = data_ptr(bias);
  if (res.defined() && out.numel() > 0) s.residual = data_ptr(res);
  gemm(s, a, weight, out);  // in_f = 0: y = b, or 0 (+ the residual)
  const char* name = f.gelu_input ? "GeluLinearBackward0"
                     : res.defined() ? "LinearAddBackward0"
                     : bias.defined() ? "AddmmBackward0" : "MmBackward0";
  // Saves a only if the weight needs a gradient, and the weight only if x does.
  return record(name, out, {x, weight, bias, res},
                [a = weight.requires_grad() ? saved(a) : Tensor(), w = x.requires_grad() ? saved(weight) : Tensor(),
                 x = f.gelu_input ? saved(x) : Tensor(), dadx, xs = x.shape(), dt = x.dtype(), rows, in_f,
                 out_f](const Tensor& g, const Needs& n) {
                  if (grad_enabled()) return linear_grads_recorded(g, a, w, x, xs, rows, n);
                  Tensor gx, gw, gb;
                  if (n[0]) {  // dx (rows, in) = dy (rows, out) W (out, in) [* gelu'(x)]
                    gx = empty(xs, dt);
                    k::GemmShape t;
                    t.m = rows, t.n = in_f, t.k = out_f;
                    if (dadx.defined() && gx.numel() > 0) t.mul = data_ptr(dadx);
                    gemm(t, g, w, gx);
                  }
                  if (n[1]) {  // dW (out, in) = dy^T (out, rows) a (rows, in)
                    gw = empty({out_f, in_f}, dt);
                    k::GemmShape t;
                    t.trans_a = true, t.m = out_f, t.n = in_f, t.k = rows;
                    gemm(t, g, a, gw);
                  }
                  if (n[2]) {  // db = sum of dy over rows: the kernel of sum(reshape(g, {rows, out_f}), {0})
                    gb = empty({out_f}, dt);
                    if (out_f > 0)
                      dispatch(dt, [&](auto zero) {
                        using T = decltype(zero);
                        k::reduce(k::ReduceOp::Sum, 1, rows, out_f, g.data<T>(), gb.data<T>());
                      });
                  }
                  return Grads{gx, gw, gb, n[3] ? g : Tensor()};
                }, Backward::Differentiable);
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) { return linear_impl(x, weight, bias, {}); }

Tensor linear_add(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual) {
  if (!residual.defined()) throw Error("linear_add: the residual is undefined");
  return linear_impl(x, weight, bias, {false, residual});
}

Tensor gelu_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual) {
  return linear_impl(x, weight, bias, {true, residual});
}

}  // namespace normlab::autograd
