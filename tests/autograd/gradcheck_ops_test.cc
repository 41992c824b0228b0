// gradcheck (float64 central differences) of every differentiable op, including broadcasting,
// every reduction dim with and without keepdim, shape ops, matmul/linear, softmax and the losses.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::distinct_input;
using normlab::test::expect_gradcheck;
using normlab::test::nonzero_input;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string r = "{";
  for (size_t i = 0; i < dims.size(); ++i) r += (i ? "," : "") + std::to_string(dims[i]);
  return r + "}";
}

// Every dim list a reduction over a (2, 3, 4) tensor is checked with.
const std::vector<std::vector<int64_t>> kDimLists = {{0}, {1}, {2}, {-1}, {-2}, {-3}, {0, 2},
                                                     {-1, 0}, {0, 1}, {1, 2}, {0, 1, 2}, {}};

}  // namespace

BOOST_AUTO_TEST_SUITE(gradcheck_ops)

// ---- Binary ops with broadcasting ---------------------------------------------------------------

BOOST_AUTO_TEST_CASE(binary_same_shape) {
  const Tensor a = random_input({2, 3}, 1), b = random_input({2, 3}, 2, 0.5, 2);
  expect_gradcheck("add", [](const In& x) { return add(x[0], x[1]); }, {a, b});
  expect_gradcheck("sub", [](const In& x) { return sub(x[0], x[1]); }, {a, b});
  expect_gradcheck("mul", [](const In& x) { return mul(x[0], x[1]); }, {a, b});
  expect_gradcheck("div", [](const In& x) { return div(x[0], x[1]); }, {a, b});
}

BOOST_AUTO_TEST_CASE(binary_broadcasting) {
  struct Case { Shape a, b; };
  const std::vector<Case> cases = {{{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{4}, {2, 3, 4}}, {{}, {2, 3}},
                                   {{2, 3}, {}},     {{2, 1, 4}, {3, 1}}, {{1}, {5}},   {{2, 3, 1}, {2, 1, 4}}};
  unsigned seed = 10;
  for (const Case& c : cases) {
    const Tensor a = random_input(c.a, ++seed), b = random_input(c.b, ++seed, 0.5, 2);
    const std::string shapes = shape_str(c.a) + " with " + shape_str(c.b);
    expect_gradcheck("add " + shapes, [](const In& x) { return x[0] + x[1]; }, {a, b});
    expect_gradcheck("sub " + shapes, [](const In& x) { return x[0] - x[1]; }, {a, b});
    expect_gradcheck("mul " + shapes, [](const In& x) { return x[0] * x[1]; }, {a, b});
    expect_gradcheck("div " + shapes, [](const In& x) { return x[0] / x[1]; }, {a, b});
  }
}

BOOST_AUTO_TEST_CASE(binary_one_side_requires_grad) {
  const Tensor a = random_input({3, 1}, 3), b = random_input({1, 4}, 4, 0.5, 2).detach();
  expect_gradcheck("mul, b constant", [](const In& x) { return x[0] * x[1]; }, {a, b});
  expect_gradcheck("div, b constant", [](const In& x) { return x[0] / x[1]; }, {a, b});
  const Tensor c = random_input({3, 1}, 5).detach(), d = random_input({1, 4}, 6, 0.5, 2);
  expect_gradcheck("mul, a constant", [](const In& x) { return x[0] * x[1]; }, {c, d});
  expect_gradcheck("div, a constant", [](const In& x) { return x[0] / x[1]; }, {c, d});
}

BOOST_AUTO_TEST_CASE(tensor_with_double_scalar) {
  const Tensor a = random_input({2, 3}, 7, 0.5, 2);
  expect_gradcheck("a + 2.5", [](const In& x) { return x[0] + 2.5; }, {a});
  expect_gradcheck("a - 2.5", [](const In& x) { return x[0] - 2.5; }, {a});
  expect_gradcheck("a * -1.5", [](const In& x) { return x[0] * -1.5; }, {a});
  expect_gradcheck("a / 3", [](const In& x) { return x[0] / 3.0; }, {a});
  expect_gradcheck("2.5 + a", [](const In& x) { return 2.5 + x[0]; }, {a});
  expect_gradcheck("2.5 - a", [](const In& x) { return 2.5 - x[0]; }, {a});
  expect_gradcheck("-1.5 * a", [](const In& x) { return -1.5 * x[0]; }, {a});
  expect_gradcheck("3 / a", [](const In& x) { return 3.0 / x[0]; }, {a});
}

BOOST_AUTO_TEST_CASE(rank0_inputs) {
  const Tensor s = random_input({}, 8, 0.5, 2), t = random_input({}, 9, 0.5, 2);
  expect_gradcheck("scalar * scalar", [](const In& x) { return x[0] * x[1]; }, {s, t});
  expect_gradcheck("exp(scalar)", [](const In& x) { return exp(x[0]); }, {s});
  expect_gradcheck("sum(scalar)", [](const In& x) { return sum(x[0]); }, {s});
}

// ---- Unary ops ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(unary_ops) {
  const Tensor x = random_input({3, 4}, 20, -2, 2), pos = random_input({3, 4}, 21, 0.2, 3);
  const Tensor nz = nonzero_input({3, 4}, 22);
  expect_gradcheck("neg", [](const In& v) { return neg(v[0]); }, {x});
  expect_gradcheck("-x", [](const In& v) { return -v[0]; }, {x});
  expect_gradcheck("exp", [](const In& v) { return exp(v[0]); }, {x});
  expect_gradcheck("log", [](const In& v) { return log(v[0]); }, {pos});
  expect_gradcheck("sqrt", [](const In& v) { return sqrt(v[0]); }, {pos});
  expect_gradcheck("relu", [](const In& v) { return relu(v[0]); }, {nz});
  expect_gradcheck("tanh", [](const In& v) { return tanh(v[0]); }, {x});
  expect_gradcheck("sigmoid", [](const In& v) { return sigmoid(v[0]); }, {x});
  expect_gradcheck("gelu", [](const In& v) { return gelu(v[0]); }, {x});
  expect_gradcheck("square", [](const In& v) { return square(v[0]); }, {x});
}

BOOST_AUTO_TEST_CASE(pow_exponents) {
  const Tensor pos = random_input({2, 5}, 30, 0.3, 2.5), x = random_input({2, 5}, 31, -2, 2);
  for (double p : {0.5, 2.0, 3.0, -1.0, 1.7, -2.5, 0.0, 1.0})
    expect_gradcheck("pow(positive x, " + std::to_string(p) + ")", [p](const In& v) { return pow(v[0], p); }, {pos});
  for (double p : {2.0, 3.0, 0.0, 1.0})  // integer exponents work for negative x too
    expect_gradcheck("pow(any x, " + std::to_string(p) + ")", [p](const In& v) { return pow(v[0], p); }, {x});
}

// ---- Reductions over every dim list, with and without keepdim ---------------------------------

BOOST_AUTO_TEST_CASE(sum_mean_each_dim_list) {
  const Tensor x = random_input({2, 3, 4}, 40);
  for (const auto& d : kDimLists)
    for (bool keep : {false, true}) {
      const std::string what = dims_str(d) + (keep ? " keepdim" : "");
      expect_gradcheck("sum " + what, [d, keep](const In& v) { return sum(v[0], d, keep); }, {x});
      expect_gradcheck("mean " + what, [d, keep](const In& v) { return mean(v[0], d, keep); }, {x});
    }
  expect_gradcheck("sum()", [](const In& v) { return sum(v[0]); }, {x});
  expect_gradcheck("mean()", [](const In& v) { return mean(v[0]); }, {x});
}

BOOST_AUTO_TEST_CASE(var_each_dim_list) {
  const Tensor x = random_input({2, 3, 4}, 41);
  for (const auto& d : kDimLists)
    for (bool keep : {false, true})
      for (bool unbiased : {false, true}) {
        const std::string what = dims_str(d) + (keep ? " keepdim" : "") + (unbiased ? " unbiased" : " biased");
        expect_gradcheck("var " + what, [d, keep, unbiased](const In& v) { return var(v[0], d, unbiased, keep); }, {x});
      }
  expect_gradcheck("var() unbiased", [](const In& v) { return var(v[0]); }, {x});
  expect_gradcheck("var() biased", [](const In& v) { return var(v[0], {}, false); }, {x});
}

BOOST_AUTO_TEST_CASE(max_each_dim_list) {
  const Tensor x = distinct_input({2, 3, 4}, 42);
  for (const auto& d : kDimLists)
    for (bool keep : {false, true}) {
      const std::string what = dims_str(d) + (keep ? " keepdim" : "");
      expect_gradcheck("max " + what, [d, keep](const In& v) { return max(v[0], d, keep); }, {x});
    }
  expect_gradcheck("max()", [](const In& v) { return max(v[0]); }, {x});
}

BOOST_AUTO_TEST_CASE(reductions_of_rank0_and_rank1) {
  const Tensor s = random_input({}, 43), v = distinct_input({5}, 44);
  for (bool keep : {false, true}) {
    expect_gradcheck("sum rank 0 dim 0", [keep](const In& x) { return sum(x[0], {0}, keep); }, {s});
    expect_gradcheck("mean rank 0 dim -1", [keep](const In& x) { return mean(x[0], {-1}, keep); }, {s});
    expect_gradcheck("max rank 0 dim 0", [keep](const In& x) { return max(x[0], {0}, keep); }, {s});
    expect_gradcheck("sum rank 1", [keep](const In& x) { return sum(x[0], {0}, keep); }, {v});
    expect_gradcheck("var rank 1", [keep](const In& x) { return var(x[0], {0}, true, keep); }, {v});
    expect_gradcheck("max rank 1", [keep](const In& x) { return max(x[0], {-1}, keep); }, {v});
  }
}

// ---- Shape ops ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(shape_ops) {
  const Tensor x = random_input({2, 3, 4}, 50);
  // A non-symmetric weighting after each op, so that a gradient routed to the wrong element fails.
  const Tensor w24 = random_input({24}, 51).detach();
  auto weigh = [w24](const Tensor& y) { return mul(reshape(y, {-1}), w24); };
  expect_gradcheck("reshape (6, 4)", [=](const In& v) { return weigh(reshape(v[0], {6, 4})); }, {x});
  expect_gradcheck("reshape (-1, 2)", [=](const In& v) { return weigh(reshape(v[0], {-1, 2})); }, {x});
  expect_gradcheck("reshape ()", [](const In& v) { return reshape(v[0], {}); }, {random_input({1, 1}, 52)});
  for (const std::vector<int64_t>& p : std::vector<std::vector<int64_t>>{{2, 0, 1}, {1, 2, 0}, {0, 2, 1}, {-1, 0, 1}})
    expect_gradcheck("permute " + dims_str(p), [=](const In& v) { return weigh(permute(v[0], p)); }, {x});
  expect_gradcheck("transpose(0, 2)", [=](const In& v) { return weigh(transpose(v[0], 0, 2)); }, {x});
  expect_gradcheck("transpose(-1, -2)", [=](const In& v) { return weigh(transpose(v[0], -1, -2)); }, {x});
  for (int64_t d : {0, 1, 3, -1, -4})
    expect_gradcheck("unsqueeze " + std::to_string(d), [=](const In& v) { return weigh(unsqueeze(v[0], d)); }, {x});
  const Tensor y = random_input({2, 1, 3, 1}, 53);
  const Tensor w6 = random_input({6}, 54).detach();
  expect_gradcheck("squeeze()", [=](const In& v) { return mul(squeeze(v[0]), reshape(w6, {2, 3})); }, {y});
  expect_gradcheck("squeeze(1)", [=](const In& v) { return mul(squeeze(v[0], 1), reshape(w6, {2, 3, 1})); }, {y});
  expect_gradcheck("squeeze(-1)", [=](const In& v) { return mul(squeeze(v[0], -1), reshape(w6, {2, 1, 3})); }, {y});
  expect_gradcheck("flatten()", [=](const In& v) { return weigh(flatten(v[0])); }, {x});
  expect_gradcheck("flatten(1)", [=](const In& v) { return weigh(flatten(v[0], 1)); }, {x});
  expect_gradcheck("flatten(0, 1)", [=](const In& v) { return weigh(flatten(v[0], 0, 1)); }, {x});
}

BOOST_AUTO_TEST_CASE(expand_and_narrow) {
  const Tensor w24 = random_input({2, 3, 4}, 55).detach();
  const Tensor c = random_input({3, 1}, 56), r = random_input({4}, 57), s = random_input({}, 58);
  expect_gradcheck("expand (3,1) -> (2,3,4)", [=](const In& v) { return mul(expand(v[0], {2, 3, 4}), w24); }, {c});
  expect_gradcheck("expand (3,1) -> (2,-1,4)", [=](const In& v) { return mul(expand(v[0], {2, -1, 4}), w24); }, {c});
  expect_gradcheck("expand (4) -> (2,3,-1)", [=](const In& v) { return mul(expand(v[0], {2, 3, -1}), w24); }, {r});
  expect_gradcheck("expand () -> (2,3,4)", [=](const In& v) { return mul(expand(v[0], {2, 3, 4}), w24); }, {s});
  const Tensor x = random_input({5, 3}, 59), w = random_input({2, 3}, 60).detach();
  for (int64_t start : {0, 1, 3})
    expect_gradcheck("narrow(" + std::to_string(start) + ", 2)",
                     [=](const In& v) { return mul(narrow(v[0], start, 2), w); }, {x});
  expect_gradcheck("narrow then exp", [](const In& v) { return exp(narrow(v[0], 2, 3)); }, {x});
  expect_gradcheck("narrow of narrow", [=](const In& v) { return mul(narrow(narrow(v[0], 1, 4), 2, 2), w); }, {x});
}

// ---- Matrix products ----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(matmul_shapes) {
  struct Case { Shape a, b; };
  const std::vector<Case> cases = {{{3, 4}, {4, 5}}, {{1, 1}, {1, 1}}, {{2, 3, 4}, {2, 4, 5}},
                                   {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}}, {{1, 7}, {7, 1}}};
  unsigned seed = 70;
  for (const Case& c : cases) {
    const Tensor a = random_input(c.a, ++seed), b = random_input(c.b, ++seed);
    expect_gradcheck("matmul " + shape_str(c.a) + " @ " + shape_str(c.b),
                     [](const In& v) { return matmul(v[0], v[1]); }, {a, b});
  }
  const Tensor a = random_input({3, 4}, 80), b = random_input({4, 2}, 81).detach();
  expect_gradcheck("matmul, b constant", [](const In& v) { return matmul(v[0], v[1]); }, {a, b});
  expect_gradcheck("matmul, a constant", [](const In& v) { return matmul(v[1], v[0]); },
                   {random_input({2, 3}, 82), random_input({4, 2}, 83).detach()});
}

BOOST_AUTO_TEST_CASE(linear_variants) {
  const Tensor x = random_input({4, 3}, 90), w = random_input({5, 3}, 91), b = random_input({5}, 92);
  expect_gradcheck("linear with bias", [](const In& v) { return linear(v[0], v[1], v[2]); }, {x, w, b});
  expect_gradcheck("linear without bias", [](const In& v) { return linear(v[0], v[1]); }, {x, w});
  const Tensor x3 = random_input({2, 3, 3}, 93);
  expect_gradcheck("linear, 3-D input", [](const In& v) { return linear(v[0], v[1], v[2]); }, {x3, w, b});
  const Tensor x1 = random_input({3}, 94);
  expect_gradcheck("linear, 1-D input", [](const In& v) { return linear(v[0], v[1], v[2]); }, {x1, w, b});
  expect_gradcheck("linear, weight only", [](const In& v) { return linear(v[0], v[1], v[2]); },
                   {x.detach(), w, b.detach()});
}

BOOST_AUTO_TEST_CASE(fused_linear_variants) {
  const Tensor x = random_input({4, 3}, 95), w = random_input({5, 3}, 96), b = random_input({5}, 97);
  const Tensor r = random_input({4, 5}, 98), x3 = random_input({2, 3, 3}, 99), r3 = random_input({2, 3, 5}, 100);
  expect_gradcheck("linear_add", [](const In& v) { return linear_add(v[0], v[1], v[2], v[3]); }, {x, w, b, r});
  expect_gradcheck("linear_add, 3-D, no bias", [](const In& v) { return linear_add(v[0], v[1], Tensor(), v[2]); },
                   {x3, w, r3});
  expect_gradcheck("gelu_linear", [](const In& v) { return gelu_linear(v[0], v[1], v[2]); }, {x, w, b});
  expect_gradcheck("gelu_linear with a residual", [](const In& v) { return gelu_linear(v[0], v[1], v[2], v[3]); },
                   {x, w, b, r});
  expect_gradcheck("gelu_linear, input only", [](const In& v) { return gelu_linear(v[0], v[1], v[2]); },
                   {x, w.detach(), b.detach()});
  expect_gradcheck("gelu_linear, weight only", [](const In& v) { return gelu_linear(v[0], v[1], v[2], v[3]); },
                   {x.detach(), w, b, r.detach()});
}

// ---- Softmax and losses -------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(softmax_each_dim) {
  const Tensor x = random_input({2, 3, 4}, 100, -3, 3);
  const Tensor w = random_input({2, 3, 4}, 101).detach();  // weights make the sum non-trivial
  for (int64_t d : {0, 1, 2, -1, -2, -3}) {
    expect_gradcheck("softmax dim " + std::to_string(d), [=](const In& v) { return mul(softmax(v[0], d), w); }, {x});
    expect_gradcheck("log_softmax dim " + std::to_string(d), [=](const In& v) { return log_softmax(v[0], d); }, {x});
  }
  const Tensor big = random_input({2, 3}, 102, 500, 510);  // stable for large logits
  expect_gradcheck("log_softmax of large logits", [](const In& v) { return log_softmax(v[0], 1); }, {big});
}

BOOST_AUTO_TEST_CASE(losses) {
  const Tensor logits = random_input({4, 5}, 110, -2, 2);
  expect_gradcheck("cross_entropy", [](const In& v) { return cross_entropy(v[0], {0, 4, 2, 2}); }, {logits});
  expect_gradcheck("nll_loss of log_softmax",
                   [](const In& v) { return nll_loss(log_softmax(v[0], 1), {1, 3, 0, 4}); }, {logits});
  expect_gradcheck("nll_loss direct", [](const In& v) { return nll_loss(v[0], {1, 3, 0, 4}); }, {logits});
  const Tensor a = random_input({3, 4}, 111), t = random_input({3, 4}, 112);
  expect_gradcheck("mse_loss", [](const In& v) { return mse_loss(v[0], v[1]); }, {a, t});
  expect_gradcheck("mse_loss, target constant", [](const In& v) { return mse_loss(v[0], v[1]); }, {a, t.detach()});
}

// ---- Copies and composites ----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(clone_and_to) {
  const Tensor x = random_input({2, 3}, 120);
  expect_gradcheck("clone", [](const In& v) { return mul(v[0].clone(), v[0]); }, {x});
  expect_gradcheck("to(float64) is identity", [](const In& v) { return v[0].to(DType::Float64); }, {x});
  // float32 -> float64 -> float32: the gradient flows back converted (not a gradcheck: float32).
  Tensor f = tensor({1, 2, 3});
  f.requires_grad_();
  Tensor y = sum(mul(f.to(DType::Float64), tensor({0.5, -1, 4}, DType::Float64)));
  y.backward();
  BOOST_TEST((f.grad().dtype() == DType::Float32));
  normlab::test::check_tensor(f.grad(), {0.5, -1, 4});
}

BOOST_AUTO_TEST_CASE(composites) {
  // A 2-layer MLP with a GELU hidden layer, cross-entropy on top: every parameter checked.
  const Tensor x = random_input({4, 3}, 130), w1 = random_input({6, 3}, 131), b1 = random_input({6}, 132);
  const Tensor w2 = random_input({2, 6}, 133), b2 = random_input({2}, 134);
  expect_gradcheck("mlp gelu + cross_entropy", [](const In& v) {
    return cross_entropy(linear(gelu(linear(v[0], v[1], v[2])), v[3], v[4]), {0, 1, 1, 0});
  }, {x, w1, b1, w2, b2});
  expect_gradcheck("mlp tanh/sigmoid + mse", [](const In& v) {
    const Tensor h = tanh(add(matmul(v[0], transpose(v[1], 0, 1)), v[2]));
    return mse_loss(sigmoid(linear(h, v[3], v[4])), full({4, 2}, 0.5, DType::Float64));
  }, {x, w1, b1, w2, b2});
  // A layer-norm written from primitives: (x - mean) / sqrt(var + eps) * g + b over the last dim.
  const Tensor g = random_input({3}, 135), b = random_input({3}, 136);
  expect_gradcheck("layernorm from primitives", [](const In& v) {
    const Tensor mu = mean(v[0], {-1}, true);
    const Tensor r = rdiv(1.0, sqrt(add(var(v[0], {-1}, false, true), 1e-5)));
    return add(mul(mul(sub(v[0], mu), r), v[1]), v[2]);
  }, {x, g, b});
  // A diamond: x feeds two branches that meet again; and x used twice in one op.
  expect_gradcheck("diamond", [](const In& v) { return mul(exp(v[0]), tanh(v[0])) + v[0] * v[0]; }, {x});
  // A batch-norm-like composite: statistics over dim 0, broadcast back.
  expect_gradcheck("batchnorm from primitives", [](const In& v) {
    const Tensor c = sub(v[0], mean(v[0], {0}, true));
    return div(c, sqrt(add(mean(square(c), {0}, true), 1e-5)));
  }, {x});
}

BOOST_AUTO_TEST_SUITE_END()

// gradcheck itself: it must catch a wrong backward, say where, and leave the inputs as they were.
BOOST_AUTO_TEST_SUITE(gradcheck_itself)

BOOST_AUTO_TEST_CASE(catches_a_wrong_backward) {
  // y = x^2 with a backward that has its factor 2 at element 1 only (element 0 is the first wrong).
  const auto wrong = [](const In& v) {
    const Tensor x = v[0];
    return record("WrongSquare", mul(x.detach(), x.detach()), {x}, [x = saved(x)](const Tensor& g, const Needs&) {
      Tensor gx = mul(g, x);
      gx.set_flat(1, gx.flat(1) * 2);  // 2x at element 1, x elsewhere
      return std::vector<Tensor>{gx};
    });
  };
  const Tensor x = random_input({3}, 140, 0.5, 1.5);
  normlab::test::expect_error([&] { gradcheck(wrong, {x}); }, {"gradcheck", "input 0", "element [0]", "numerical",
                                                             "analytical"});
  GradcheckOptions quiet;
  quiet.raise_exception = false;
  BOOST_TEST(!gradcheck(wrong, {x}, quiet));
  // The correct op passes, and a gradient that is off by less than the tolerance passes too.
  BOOST_TEST(gradcheck([](const In& v) { return mul(v[0], v[0]); }, {x}));
  const auto slightly_off = [](const In& v) {
    const Tensor x = v[0];
    return record("AlmostSquare", mul(x.detach(), x.detach()), {x}, [x = saved(x)](const Tensor& g, const Needs&) {
      return std::vector<Tensor>{mul(mul(g, x), 2.0 * (1 + 1e-4))};  // within rtol = 1e-3
    });
  };
  BOOST_TEST(gradcheck(slightly_off, {x}));
}

BOOST_AUTO_TEST_CASE(leaves_inputs_unchanged) {
  const Tensor x = random_input({2, 2}, 141);
  const std::vector<double> before = x.to_vector();
  x.set_grad(full({2, 2}, 7, DType::Float64));
  BOOST_TEST(gradcheck([](const In& v) { return exp(v[0]); }, {x}));
  BOOST_TEST(x.to_vector() == before);  // perturbations undone exactly
  normlab::test::check_tensor(x.grad(), {7, 7, 7, 7}, 0, 0);  // the caller's .grad is back
  const Tensor y = random_input({2}, 142);
  BOOST_TEST(gradcheck([](const In& v) { return exp(v[0]); }, {y}));
  BOOST_TEST(!y.grad().defined());
}

BOOST_AUTO_TEST_SUITE_END()
