// Attention ops: argument checks, one fused kernel call per forward, and the backward recorded
// right below it calling the fused backward kernel.
#include "autograd/attention.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/attention.h"
#include "autograd/loss.h"
#include "autograd/matmul.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace k = kernels;
using Grads = std::vector<Tensor>;

namespace {

// The forward keeps P (B, H, T, T) for the backward, which then skips its costliest product (q k^T
// again, and an exp per score), when the forward is recorded and the sequence is short: P is then
// at most 128 / D times the size of q (1 MiB a layer for the study's GPT, b16 h4 T64; the
// measurement is in bench/results/seq_rows.md); longer sequences compute it again, chunk by chunk.
constexpr int64_t kKeepPMaxT = 128;

Tensor kept_probabilities(const k::AttentionShape& s, bool recorded, DType dtype) {
  if (s.T > kKeepPMaxT || !recorded) return Tensor();
  return empty({s.B, s.H, s.T, s.T}, dtype);
}

template <typename T_>
T_* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T_>() : nullptr;
}

// P = softmax(q k^T s + mask) (B, H, T, T), s = 1/sqrt(D), the mask -inf above the diagonal when
// causal: of ops, recorded when grad mode is on.
Tensor probabilities(const Tensor& q, const Tensor& kt, bool causal) {
  const int64_t T = q.size(2), D = q.size(3);
  Tensor scores = mul(matmul(q, transpose(kt, -1, -2)), 1 / std::sqrt(static_cast<double>(D)));
  if (causal) {
    Tensor mask = zeros({T, T}, q.dtype());
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < T; ++j) mask.set_flat(i * T + j, -std::numeric_limits<double>::infinity());
    scores = add(scores, mask);
  }
  return softmax(scores, -1);
}

// The attention's double backward, written out. The first derivatives for q, k, v (B, H, T, D)
// and the output's gradient g are (P as above, A^T the transpose of the last two dims)
//   dP = g v^T,  delta = rowsum(dP P),  dS = P (dP - delta),
//   dq = s dS k,  dk = s dS^T q,  dv = P^T g.
// The gradients of L = <aq, dq> + <ak, dk> + <av, dv> with respect to q, k, v, g, by the chain rule
// through dS (then dP and P) and P (then S = s q k^T):
//   Abar = s (aq k^T + q ak^T)                        (dL/d dS)
//   gam  = rowsum(Abar P),  E = P (Abar - gam)        (dL/d dP)
//   Pi   = g av^T + Abar (dP - delta) - gam dP        (dL/dP)
//   Sig  = P (Pi - rowsum(Pi P))                      (dL/dS, the softmax's backward)
//   d/dq = s (dS ak + Sig k),  d/dk = s (dS^T aq + Sig^T q),  d/dv = E^T g,  d/dg = P av + E v.
// Of ops: unrecorded with grad mode off, recorded with it on (third derivatives).
Grads attention_double_backward(const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor& g, const Tensor& aq,
                                const Tensor& ak, const Tensor& av, bool causal, const Needs& need) {
  const double s = 1 / std::sqrt(static_cast<double>(q.size(3)));
  const auto tr = [](const Tensor& t) { return transpose(t, -1, -2); };
  const auto rowsum = [](const Tensor& t) { return sum(t, {-1}, true); };
  const Tensor p = probabilities(q, kt, causal), dp = matmul(g, tr(v));
  const Tensor dp_c = sub(dp, rowsum(mul(dp, p))), ds = mul(p, dp_c);
  const Tensor abar = mul(add(matmul(aq, tr(kt)), matmul(q, tr(ak))), s);
  const Tensor gam = rowsum(mul(abar, p)), e = mul(p, sub(abar, gam));
  const Tensor pi = sub(add(matmul(g, tr(av)), mul(abar, dp_c)), mul(gam, dp));
  const Tensor sig = mul(p, sub(pi, rowsum(mul(pi, p))));
  return {need[0] ? mul(add(matmul(ds, ak), matmul(sig, kt)), s) : Tensor(),
          need[1] ? mul(add(matmul(tr(ds), aq), matmul(tr(sig), q)), s) : Tensor(),
          need[2] ? matmul(tr(e), g) : Tensor(), need[3] ? add(matmul(p, av), matmul(e, v)) : Tensor()};
}

// causal_self_attention's double backward: the heads of qkv (B, T, 3C), of the output's gradient g
// (B, T, C) and of the cotangent gp (B, T, 3C) of its first derivative as (B, H, T, D) operands
// (views, permuted), attention_double_backward, and the results laid out as qkv and g again.
Grads packed_double_backward(const Tensor& qkv, const Tensor& g, const Tensor& gp, int64_t H, int64_t C,
                             const Needs& need) {
  const int64_t B = qkv.size(0), T = qkv.size(1), D = C / H;
  const auto heads = [&](const Tensor& t) { return permute(reshape(t, {B, T, H, D}), {0, 2, 1, 3}); };
  const auto back = [&](const Tensor& t) { return reshape(permute(t, {0, 2, 1, 3}), {B, T, C}); };
  const auto third = [&](const Tensor& t, int64_t i) { return heads(narrow(t, 2, i * C, C)); };
  const Grads d = attention_double_backward(third(qkv, 0), third(qkv, 1), third(qkv, 2), heads(g), third(gp, 0),
                                            third(gp, 1), third(gp, 2), true, {need[0], need[0], need[0], need[1]});
  return {need[0] ? cat({back(d[0]), back(d[1]), back(d[2])}, 2) : Tensor(), need[1] ? back(d[3]) : Tensor()};
}

}  // namespace

// ---- (B, H, T, D) operands ------------------------------------------------------------------------

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& kt, const Tensor& v, bool causal) {
  const std::string op = "scaled_dot_product_attention";
  for (const Tensor* t : {&q, &kt, &v})
    check(t->defined(), [&] { return op + ": an input is an undefined tensor"; });
  if (q.dim() != 4)
    throw Error(op + ": expected q of rank 4 (B, H, T, D), got q of size " + shape_str(q.shape()));
  for (auto [t, name] : {std::pair<const Tensor*, const char*>{&kt, "k"}, {&v, "v"}}) {
    if (t->shape() != q.shape())
      throw Error(op + ": expected " + name + " of q's size " + shape_str(q.shape()) + ", got " + name +
                  " of size " + shape_str(t->shape()));
    if (t->dtype() != q.dtype())
      throw Error(op + ": expected " + name + " of q's dtype " + dtype_name(q.dtype()) + ", got " +
                  dtype_name(t->dtype()));
  }
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  const k::AttentionLayout l{H * T * D, T * D, D};
  const k::AttentionShape s{B, H, T, D, causal, l, l, l, l};
  Tensor o = empty_like(q), lse = empty({B, H, T}, q.dtype());
  const Tensor p = kept_probabilities(s, should_record({q, kt, v}), q.dtype());
  dispatch(q.dtype(), [&](auto zero) {
    using T_ = decltype(zero);
    k::attention_forward(s, q.data<T_>(), kt.data<T_>(), v.data<T_>(), o.data<T_>(), lse.data<T_>(),
                         data_or_null<T_>(p));
  });
  // Saves q, k, v, the output, the log-sum-exp of each query row and, for short sequences, P.
  return record("ScaledDotProductAttentionBackward", o, {q, kt, v},
                [q = saved(q), kt = saved(kt), v = saved(v), o_ = saved_output(o), lse, p, s](const Tensor& g,
                                                                                       const Needs&) {
                  const int64_t n = q.numel();
                  Tensor packed = empty({3 * n}, q.dtype());  // dq, dk, dv one after another
                  const auto parts = [n, shape = q.shape()](const Tensor& t) {
                    return Grads{reshape(narrow(t, 0, n), shape), reshape(narrow(t, n, n), shape),
                                 reshape(narrow(t, 2 * n, n), shape)};
                  };
                  {  // The kernel makes all three gradients at once.
                    const Grads d = parts(packed);
                    dispatch(q.dtype(), [&](auto zero) {
                      using T_ = decltype(zero);
                      k::attention_backward(s, q.data<T_>(), kt.data<T_>(), v.data<T_>(), o_.data<T_>(), g.data<T_>(),
                                            lse.data<T_>(), d[0].data<T_>(), d[1].data<T_>(), d[2].data<T_>(),
                                            data_or_null<T_>(p));
                    });
                  }
                  if (grad_enabled())  // a create_graph pass: one recorded op, the written-out formula its backward
                    packed = record("ScaledDotProductAttentionBackwardBackward", packed, {q, kt, v, g},
                                    [q, kt, v, g = saved(g), parts, causal = s.causal](const Tensor& gp, const Needs& nd) {
                                      const Grads a = parts(gp);
                                      return attention_double_backward(q, kt, v, g, a[0], a[1], a[2], causal, nd);
                                    },
                                    Backward::Differentiable);
                  return parts(packed);
                }, Backward::Differentiable);
}

// ---- Packed qkv (B, T, 3C) ------------------------------------------------------------------------

Tensor causal_self_attention(const Tensor& qkv, int64_t heads) {
  const std::string op = "causal_self_attention";
  check(qkv.defined(), [&] { return op + ": the input is an undefined tensor"; });
  if (qkv.dim() != 3)
    throw Error(op + ": expected qkv of rank 3 (B, T, 3C), got qkv of size " + shape_str(qkv.shape()));
  const int64_t B = qkv.size(0), T = qkv.size(1), C3 = qkv.size(2);
  if (C3 % 3 != 0)
    throw Error(op + ": expected qkv's last size 3C (q, k, v side by side) to be a multiple of 3, got qkv of size " +
                shape_str(qkv.shape()));
  const int64_t C = C3 / 3;
  if (heads < 1) throw Error(op + ": expected heads >= 1, got heads = " + std::to_string(heads));
  if (C % heads != 0)
    throw Error(op + ": the width C = " + std::to_string(C) + " (qkv of size " + shape_str(qkv.shape()) +
                ") is not divisible by heads = " + std::to_string(heads));
  const int64_t H = heads, D = C / heads;
  // Element (b, h, t, d) of q is qkv[b, t, h D + d]; of k and v the same C and 2C further on; of o
  // (B, T, C) o[b, t, h D + d].
  const k::AttentionLayout in{T * C3, D, C3}, out{T * C, D, C};
  const k::AttentionShape s{B, H, T, D, true, in, in, in, out};
  Tensor o = empty({B, T, C}, qkv.dtype()), lse = empty({B, H, T}, qkv.dtype());
  const Tensor probs = kept_probabilities(s, should_record({qkv}), qkv.dtype());
  dispatch(qkv.dtype(), [&](auto zero) {
    using T_ = decltype(zero);
    const T_* p = qkv.data<T_>();
    k::attention_forward(s, p, p + C, p + 2 * C, o.data<T_>(), lse.data<T_>(), data_or_null<T_>(probs));
  });
  return record("CausalSelfAttentionBackward", o, {qkv},
                [qkv = saved(qkv), o_ = saved_output(o), lse, probs, s, C](const Tensor& g, const Needs&) {
                  // dq, dk, dv fill the three thirds of one (B, T, 3C) gradient.
                  Tensor d = empty_like(qkv);
                  dispatch(qkv.dtype(), [&](auto zero) {
                    using T_ = decltype(zero);
                    const T_* p = qkv.data<T_>();
                    T_* dp = d.data<T_>();
                    k::attention_backward(s, p, p + C, p + 2 * C, o_.data<T_>(), g.data<T_>(), lse.data<T_>(), dp,
                                          dp + C, dp + 2 * C, data_or_null<T_>(probs));
                  });
                  if (grad_enabled())  // a create_graph pass: one recorded op, the written-out formula its backward
                    d = record("CausalSelfAttentionBackwardBackward", d, {qkv, g},
                               [qkv, g = saved(g), H = s.H, C](const Tensor& gp, const Needs& nd) {
                                 return packed_double_backward(qkv, g, gp, H, C, nd);
                               },
                               Backward::Differentiable);
                  return Grads{d};
                }, Backward::Differentiable);
}

}  // namespace normlab::autograd
