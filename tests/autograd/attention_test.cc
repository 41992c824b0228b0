// The attention ops: float64 gradchecks, agreement with the unfused formula built from primitive
// ops (matmul, softmax), the packed op against the (B, H, T, D) op on the split heads, causality
// (a later token never changes an earlier output), PyTorch parity (tests/fixtures/attention.safetensors:
// PyTorch 1.13's unfused softmax(q k^T / sqrt(D) masked with -inf) @ v), and the errors.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::expect_elements_close;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// softmax(q k^T / sqrt(D) + mask) v from primitive ops, q, k, v (B, H, T, D); the mask adds -inf
// above the diagonal when causal.
Tensor unfused(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  const Tensor q3 = reshape(q, {B * H, T, D}), k3 = reshape(k, {B * H, T, D}), v3 = reshape(v, {B * H, T, D});
  Tensor s = mul(matmul(q3, transpose(k3, 1, 2)), 1 / std::sqrt(static_cast<double>(D)));
  if (causal) {
    std::vector<double> m(T * T, 0.0);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < T; ++j) m[i * T + j] = -INFINITY;
    s = add(s, tensor(m, {T, T}, q.dtype()));
  }
  return reshape(matmul(softmax(s, -1), v3), {B, H, T, D});
}

// (B, T, 3C) -> q, k, v (B, H, T, D) by narrow, reshape and permute: nanoGPT's split and view.
std::vector<Tensor> split_heads(const Tensor& qkv, int64_t heads) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3;
  std::vector<Tensor> r;
  for (int64_t i = 0; i < 3; ++i) {
    // narrow works on dim 0: move the feature dim first and back.
    const Tensor part = permute(narrow(permute(qkv, {2, 0, 1}), i * C, C), {1, 2, 0});  // (B, T, C)
    r.push_back(permute(reshape(part, {B, T, heads, C / heads}), {0, 2, 1, 3}));
  }
  return r;
}

std::vector<double> values(const Tensor& t) { return t.to_vector(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(attention_ops)

BOOST_AUTO_TEST_CASE(gradcheck_scaled_dot_product_attention) {
  for (bool causal : {false, true}) {
    const Tensor q = random_input({2, 2, 5, 3}, 1, -2, 2), k = random_input({2, 2, 5, 3}, 2, -2, 2),
                 v = random_input({2, 2, 5, 3}, 3);
    expect_gradcheck(std::string("sdpa causal ") + (causal ? "true" : "false"),
                     [causal](const In& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal); },
                     {q, k, v});
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_causal_self_attention) {
  // C = 6 in 2 heads of 3, and C = 9 in 3 heads of 3 (odd head size), T = 5.
  for (auto [C, heads] : {std::pair<int64_t, int64_t>{6, 2}, {9, 3}, {4, 1}}) {
    const Tensor qkv = random_input({2, 5, 3 * C}, static_cast<unsigned>(C), -2, 2);
    const int64_t h = heads;
    expect_gradcheck("causal_self_attention C " + std::to_string(C) + " heads " + std::to_string(h),
                     [h](const In& x) { return causal_self_attention(x[0], h); }, {qkv});
  }
}

// The fused op and the formula from primitives agree in value and in the gradients of a weighted
// sum (float64, and float32 to float precision).
BOOST_AUTO_TEST_CASE(matches_the_unfused_formula) {
  for (DType dt : {DType::Float64, DType::Float32})
    for (bool causal : {false, true}) {
      BOOST_TEST_CONTEXT("dtype " << dtype_name(dt) << " causal " << causal) {
        const double tol = dt == DType::Float64 ? 1e-12 : 2e-6;
        const Shape sh{2, 3, 7, 5};
        Tensor w = random_input(sh, 9).detach().to(dt);
        std::vector<std::vector<double>> got, want;
        for (int pass = 0; pass < 2; ++pass) {
          Tensor q = random_input(sh, 4, -2, 2).detach().to(dt), k = random_input(sh, 5, -2, 2).detach().to(dt),
                 v = random_input(sh, 6).detach().to(dt);
          for (const Tensor* t : {&q, &k, &v}) t->requires_grad_();
          const Tensor o = pass == 0 ? scaled_dot_product_attention(q, k, v, causal) : unfused(q, k, v, causal);
          sum(mul(o, w)).backward();
          auto& out = pass == 0 ? got : want;
          out = {values(o), values(q.grad()), values(k.grad()), values(v.grad())};
        }
        const char* names[] = {"output", "dq", "dk", "dv"};
        for (int i = 0; i < 4; ++i) expect_elements_close(names[i], got[i], want[i], tol, tol);
      }
    }
}

// causal_self_attention(qkv) is scaled_dot_product_attention(q, k, v, causal) on the split heads
// with the heads merged back, in value and gradient.
BOOST_AUTO_TEST_CASE(packed_matches_split_heads) {
  const int64_t B = 2, T = 6, C = 12, heads = 4;
  const Tensor w = random_input({B, T, C}, 21).detach();
  Tensor qkv = random_input({B, T, 3 * C}, 22, -2, 2);
  const Tensor y = causal_self_attention(qkv, heads);
  BOOST_TEST((y.shape() == Shape{B, T, C}));
  sum(mul(y, w)).backward();
  const std::vector<double> got = values(y), got_grad = values(qkv.grad());

  Tensor qkv2 = qkv.detach().clone();
  qkv2.requires_grad_();
  const auto qs = split_heads(qkv2, heads);
  const Tensor o = scaled_dot_product_attention(qs[0], qs[1], qs[2], true);  // (B, H, T, D)
  const Tensor y2 = reshape(permute(o, {0, 2, 1, 3}), {B, T, C});
  sum(mul(y2, w)).backward();
  expect_elements_close("output", got, values(y2), 1e-14, 1e-14);
  expect_elements_close("dqkv", got_grad, values(qkv2.grad()), 1e-14, 1e-14);
}

// Changing token t (its q, k and v) changes no output before t, and does change the outputs from t
// on; without the mask it changes earlier outputs too.
BOOST_AUTO_TEST_CASE(a_later_token_never_changes_an_earlier_output) {
  const int64_t B = 2, T = 7, C = 6;
  const Tensor qkv = random_input({B, T, 3 * C}, 31).detach();
  const std::vector<double> base = values(causal_self_attention(qkv, 2));
  for (int64_t t = 1; t < T; ++t) {
    Tensor changed = qkv.clone();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < 3 * C; ++c) changed.set_flat((b * T + t) * 3 * C + c, 5.0 + c);
    const std::vector<double> y = values(causal_self_attention(changed, 2));
    for (int64_t b = 0; b < B; ++b) {
      bool same_before = true, differs_at_t = false;
      for (int64_t i = 0; i < T; ++i)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t at = (b * T + i) * C + c;
          if (i < t && y[at] != base[at]) same_before = false;
          if (i == t && y[at] != base[at]) differs_at_t = true;
        }
      BOOST_TEST(same_before, "token " << t << " changed an earlier output of batch " << b);
      BOOST_TEST(differs_at_t, "token " << t << " did not change its own output of batch " << b);
    }
  }
  // Not causal: the last token changes the first output.
  const Shape sh{1, 1, T, 3};
  const Tensor q = random_input(sh, 1).detach(), k = random_input(sh, 2).detach(), v = random_input(sh, 3).detach();
  Tensor k2 = k.clone(), v2 = v.clone();
  k2.set_flat((T - 1) * 3, 3.0);
  v2.set_flat((T - 1) * 3, 3.0);
  BOOST_TEST(scaled_dot_product_attention(q, k, v, false).flat(0) != scaled_dot_product_attention(q, k2, v2, false).flat(0));
  BOOST_TEST(scaled_dot_product_attention(q, k, v, true).flat(0) == scaled_dot_product_attention(q, k2, v2, true).flat(0));
}

// PyTorch 1.13's unfused formula, forward and the gradients of sum(output * grad_output), for
// (B, H, T, D) operands with and without the causal mask and for nanoGPT's packed qkv. Tolerances as
// tests/nn/parity_test.cc's: float32 rtol 1e-5 with an absolute floor of 1e-6, float64 1e-10, 1e-13.
BOOST_AUTO_TEST_CASE(pytorch_parity) {
  const normlab::test::Fixture fx("attention");
  for (const std::string dt : {"f32", "f64"}) {
    const double rtol = dt == "f32" ? 1e-5 : 1e-10, atol = dt == "f32" ? 1e-6 : 1e-13;
    for (const std::string name : {"full", "causal"}) {
      const std::string p = dt + "." + name + ".";
      BOOST_TEST_CONTEXT(p) {
        Tensor q = fx.get(p + "q").clone(), k = fx.get(p + "k").clone(), v = fx.get(p + "v").clone();
        for (const Tensor* t : {&q, &k, &v}) t->requires_grad_();
        const Tensor y = scaled_dot_product_attention(q, k, v, name == "causal");
        sum(mul(y, fx.get(p + "grad_output"))).backward();
        expect_elements_close(p + "output", values(y), values(fx.get(p + "output")), rtol, atol);
        expect_elements_close(p + "grad_q", values(q.grad()), values(fx.get(p + "grad_q")), rtol, atol);
        expect_elements_close(p + "grad_k", values(k.grad()), values(fx.get(p + "grad_k")), rtol, atol);
        expect_elements_close(p + "grad_v", values(v.grad()), values(fx.get(p + "grad_v")), rtol, atol);
      }
    }
    const std::string p = dt + ".packed.";
    Tensor qkv = fx.get(p + "qkv").clone();
    qkv.requires_grad_();
    const Tensor y = causal_self_attention(qkv, std::stoll(fx.meta("packed.heads")));
    sum(mul(y, fx.get(p + "grad_output"))).backward();
    expect_elements_close(p + "output", values(y), values(fx.get(p + "output")), rtol, atol);
    expect_elements_close(p + "grad_qkv", values(qkv.grad()), values(fx.get(p + "grad_qkv")), rtol, atol);
  }
}

BOOST_AUTO_TEST_CASE(errors) {
  const Tensor x = zeros({2, 3, 4, 5}), qkv = zeros({2, 3, 12});
  expect_error([&] { scaled_dot_product_attention(zeros({3, 4, 5}), zeros({3, 4, 5}), zeros({3, 4, 5})); },
               {"scaled_dot_product_attention", "rank 4", "[3, 4, 5]"});
  expect_error([&] { scaled_dot_product_attention(x, zeros({2, 3, 5, 5}), x); },
               {"scaled_dot_product_attention", "k", "[2, 3, 4, 5]", "[2, 3, 5, 5]"});
  expect_error([&] { scaled_dot_product_attention(x, x, zeros({2, 3, 4, 5}, DType::Float64)); },
               {"scaled_dot_product_attention", "v", "float32", "float64"});
  expect_error([&] { causal_self_attention(zeros({3, 12}), 2); }, {"causal_self_attention", "rank 3", "[3, 12]"});
  expect_error([&] { causal_self_attention(zeros({2, 3, 13}), 1); }, {"causal_self_attention", "multiple of 3", "13"});
  expect_error([&] { causal_self_attention(qkv, 3); }, {"causal_self_attention", "C = 4", "heads = 3"});
  expect_error([&] { causal_self_attention(qkv, 0); }, {"causal_self_attention", "heads = 0"});
}

BOOST_AUTO_TEST_SUITE_END()
