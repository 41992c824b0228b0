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

// In a create_graph pass: {dq, dk, dv} for q, k, v (B, H, T, D) and dO g, computed again with
// recorded ops from the attention's definition, so that their own derivatives flow on:
//   S = q k^T s (+ -inf above the diagonal when causal), P = softmax(S), O = P v, s = 1/sqrt(D);
//   dv = P^T g,  dP = g v^T,  dS = P (dP - rowsum(dP P)),  dq = dS k s,  dk = dS^T q s.
Grads attention_grads_recorded(const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor& g, bool causal) {
  const int64_t T = q.size(2), D = q.size(3);
  const double scale = 1 / std::sqrt(static_cast<double>(D));
  Tensor scores = mul(matmul(q, transpose(kt, -1, -2)), scale);
  if (causal) {
    Tensor mask = zeros({T, T}, q.dtype());
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < T; ++j) mask.set_flat(i * T + j, -std::numeric_limits<double>::infinity());
    scores = add(scores, mask);
  }
  const Tensor p = softmax(scores, -1);
  const Tensor dp = matmul(g, transpose(v, -1, -2));
  const Tensor ds = mul(p, sub(dp, sum(mul(dp, p), {-1}, true)));
  return {mul(matmul(ds, kt), scale), mul(matmul(transpose(ds, -1, -2), q), scale), matmul(transpose(p, -1, -2), g)};
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
                  if (grad_enabled()) return attention_grads_recorded(q, kt, v, g, s.causal);
                  // The kernel makes all three gradients at once.
                  Tensor dq = empty_like(q), dk = empty_like(q), dv = empty_like(q);
                  dispatch(q.dtype(), [&](auto zero) {
                    using T_ = decltype(zero);
                    k::attention_backward(s, q.data<T_>(), kt.data<T_>(), v.data<T_>(), o_.data<T_>(), g.data<T_>(),
                                          lse.data<T_>(), dq.data<T_>(), dk.data<T_>(), dv.data<T_>(),
                                          data_or_null<T_>(p));
                  });
                  return Grads{dq, dk, dv};
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
                  if (grad_enabled()) {  // the heads as (B, H, T, D) operands, recorded
                    const int64_t B = qkv.size(0), T = qkv.size(1), H = s.H, D = s.D;
                    const auto heads = [&](const Tensor& t) { return permute(reshape(t, {B, T, H, D}), {0, 2, 1, 3}); };
                    const auto back = [&](const Tensor& t) { return reshape(permute(t, {0, 2, 1, 3}), {B, T, C}); };
                    const Grads d = attention_grads_recorded(heads(narrow(qkv, 2, 0, C)), heads(narrow(qkv, 2, C, C)),
                                                             heads(narrow(qkv, 2, 2 * C, C)), heads(g), true);
                    return Grads{cat({back(d[0]), back(d[1]), back(d[2])}, 2)};
                  }
                  // dq, dk, dv fill the three thirds of one (B, T, 3C) gradient.
                  Tensor d = empty_like(qkv);
                  dispatch(qkv.dtype(), [&](auto zero) {
                    using T_ = decltype(zero);
                    const T_* p = qkv.data<T_>();
                    T_* dp = d.data<T_>();
                    k::attention_backward(s, p, p + C, p + 2 * C, o_.data<T_>(), g.data<T_>(), lse.data<T_>(), dp,
                                          dp + C, dp + 2 * C, data_or_null<T_>(probs));
                  });
                  return Grads{d};
                }, Backward::Differentiable);
}

}  // namespace normlab::autograd
