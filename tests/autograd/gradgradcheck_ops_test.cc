// gradgradcheck (float64 central differences of the vector-Jacobian product) of every op whose
// backward is differentiable: elementwise ops with broadcasting, activations, reductions, shape
// ops, matmul and the fused linear ops, softmax and the losses, dropout, and the normalizations
// (LayerNorm, BatchNorm in training and eval, GroupNorm, InstanceNorm), with odd sizes that leave
// SIMD tails, the kernel-backed ones on every Highway target.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/targets.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::distinct_input;
using normlab::test::expect_error;
using normlab::test::expect_gradgradcheck;
using normlab::test::for_each_target;
using normlab::test::nonzero_input;
using normlab::test::random_input;
using In = std::vector<Tensor>;

BOOST_AUTO_TEST_SUITE(gradgradcheck_ops)

BOOST_AUTO_TEST_CASE(binary_ops_with_broadcasting) {
  const Tensor a = random_input({2, 3}, 1), b = random_input({3}, 2, 0.5, 2), c = random_input({2, 1}, 3, 0.5, 2);
  expect_gradgradcheck("add", [](const In& x) { return add(x[0], x[1]); }, {a, b});
  expect_gradgradcheck("sub", [](const In& x) { return sub(x[0], x[1]); }, {a, c});
  expect_gradgradcheck("mul", [](const In& x) { return mul(x[0], x[1]); }, {a, b});
  expect_gradgradcheck("mul, one side constant", [](const In& x) { return mul(x[0], x[1]); }, {a, b.detach()});
  expect_gradgradcheck("div", [](const In& x) { return div(x[0], x[1]); }, {a, c});
  expect_gradgradcheck("div of the same tensor", [](const In& x) { return div(x[0], add(x[0], 3.0)); }, {a});
  expect_gradgradcheck("scalar ops", [](const In& x) { return rsub(2.0, mul(div(add(x[0], 1.0), 3.0), 2.5)); }, {a});
  expect_gradgradcheck("rdiv", [](const In& x) { return rdiv(2.0, x[0]); }, {random_input({5}, 4, 0.5, 2)});
}

BOOST_AUTO_TEST_CASE(unary_ops_and_activations) {
  const Tensor x = random_input({3, 5}, 10, -2, 2), pos = random_input({3, 5}, 11, 0.3, 2);
  expect_gradgradcheck("neg", [](const In& v) { return mul(neg(v[0]), v[0]); }, {x});
  expect_gradgradcheck("exp", [](const In& v) { return exp(v[0]); }, {x});
  expect_gradgradcheck("log", [](const In& v) { return log(v[0]); }, {pos});
  expect_gradgradcheck("sqrt", [](const In& v) { return sqrt(v[0]); }, {pos});
  expect_gradgradcheck("tanh", [](const In& v) { return tanh(v[0]); }, {x});
  expect_gradgradcheck("sigmoid", [](const In& v) { return sigmoid(v[0]); }, {x});
  expect_gradgradcheck("gelu", [](const In& v) { return gelu(v[0]); }, {x});
  expect_gradgradcheck("relu (times x: a nonzero second derivative)", [](const In& v) { return mul(relu(v[0]), v[0]); },
                       {nonzero_input({3, 5}, 12)});
  for (double p : {2.0, 3.0, 0.5, -1.5, 1.0})
    expect_gradgradcheck("pow " + std::to_string(p), [p](const In& v) { return pow(v[0], p); }, {pos});
  expect_gradgradcheck("square", [](const In& v) { return square(v[0]); }, {x});
}

BOOST_AUTO_TEST_CASE(reductions) {
  const Tensor x = random_input({2, 3, 5}, 20);
  for (const std::vector<int64_t>& d : std::vector<std::vector<int64_t>>{{0}, {2}, {0, 2}, {}}) {
    expect_gradgradcheck("sum of squares", [d](const In& v) { return sum(mul(v[0], v[0]), d, false); }, {x});
    expect_gradgradcheck("mean keepdim, times x", [d](const In& v) { return mul(mean(v[0], d, true), v[0]); }, {x});
    expect_gradgradcheck("var", [d](const In& v) { return var(v[0], d, true, false); }, {x});
  }
  expect_gradgradcheck("max (times x)", [](const In& v) { return mul(max(v[0], {1}, true), v[0]); },
                       {distinct_input({2, 3, 5}, 21)});
}

BOOST_AUTO_TEST_CASE(shape_ops) {
  const Tensor x = random_input({3, 4, 5}, 30);
  const auto sq = [](const Tensor& t) { return mul(t, t); };
  expect_gradgradcheck("reshape", [&](const In& v) { return sq(reshape(v[0], {12, 5})); }, {x});
  expect_gradgradcheck("permute", [&](const In& v) { return sq(permute(v[0], {2, 0, 1})); }, {x});
  expect_gradgradcheck("expand", [&](const In& v) { return sq(expand(v[0], {2, 3, 4, 5})); }, {x});
  expect_gradgradcheck("narrow dim 0", [&](const In& v) { return sq(narrow(v[0], 1, 2)); }, {x});
  expect_gradgradcheck("narrow dim 2", [&](const In& v) { return sq(narrow(v[0], 2, 1, 3)); }, {x});
  expect_gradgradcheck("select", [&](const In& v) { return sq(select(v[0], 1, 2)); }, {x});
  expect_gradgradcheck("cat and split", [&](const In& v) {
    const std::vector<Tensor> p = split(v[0], {2, 3}, 2);
    return cat({sq(p[1]), mul(p[0], 3.0), v[1]}, 2);
  }, {x, random_input({3, 4, 2}, 31)});
  expect_gradgradcheck("stack", [&](const In& v) { return sq(stack({v[0], v[1]}, 1)); },
                       {random_input({3, 5}, 32), random_input({3, 5}, 33)});
  expect_gradgradcheck("clone and to", [&](const In& v) { return sq(v[0].clone().to(DType::Float64)); }, {x});
  // The third derivative through the row slices of a sequence (x[t] pieces of one tensor).
  const Tensor s = random_input({4, 3}, 34);
  const Tensor gx = grad({sum(mul(mul(narrow(s, 1, 2), narrow(s, 1, 2)), narrow(s, 1, 2)))}, {s}, {},
                         GradOptions{true, true, false})[0];  // 3 x^2 on rows 1, 2
  const Tensor g2 = grad({sum(gx)}, {s}, {}, GradOptions{true, true, false})[0];  // 6 x
  const Tensor g3 = grad({sum(g2)}, {s})[0];  // 6
  for (int64_t i = 0; i < 12; ++i) BOOST_TEST(g3.flat(i) == (i >= 3 && i < 9 ? 6.0 : 0.0));
}

BOOST_AUTO_TEST_CASE(matrix_products_on_every_target) {
  for_each_target([] {
    // Odd sizes: every kernel's vector tails.
    expect_gradgradcheck("matmul", [](const In& v) { return matmul(v[0], v[1]); },
                         {random_input({3, 5}, 40), random_input({5, 7}, 41)});
    expect_gradgradcheck("matmul, broadcast batch", [](const In& v) { return matmul(v[0], v[1]); },
                         {random_input({2, 3, 5}, 42), random_input({5, 3}, 43)});
    expect_gradgradcheck("matmul of x with itself", [](const In& v) { return matmul(v[0], transpose(v[0], 0, 1)); },
                         {random_input({3, 5}, 44)});
    const Tensor x = random_input({3, 5}, 45), w = random_input({7, 5}, 46), b = random_input({7}, 47);
    const Tensor r = random_input({3, 7}, 48);
    expect_gradgradcheck("linear", [](const In& v) { return linear(v[0], v[1], v[2]); }, {x, w, b});
    expect_gradgradcheck("linear, squared", [](const In& v) {
      const Tensor y = linear(v[0], v[1], v[2]);
      return mul(y, y);
    }, {x, w, b});
    expect_gradgradcheck("linear, 3-D input", [](const In& v) { return linear(v[0], v[1]); },
                         {random_input({2, 3, 5}, 49), w});
    expect_gradgradcheck("linear_add", [](const In& v) { return linear_add(v[0], v[1], v[2], v[3]); }, {x, w, b, r});
    expect_gradgradcheck("gelu_linear", [](const In& v) { return gelu_linear(v[0], v[1], v[2], v[3]); },
                         {x, w, b, r});
  });
}

BOOST_AUTO_TEST_CASE(softmax_losses_and_dropout) {
  const Tensor x = random_input({3, 5}, 50, -2, 2);
  expect_gradgradcheck("softmax", [](const In& v) { return softmax(v[0], 1); }, {x});
  expect_gradgradcheck("log_softmax dim 0", [](const In& v) { return log_softmax(v[0], 0); }, {x});
  expect_gradgradcheck("cross_entropy", [](const In& v) { return cross_entropy(v[0], {4, 0, 2}); }, {x});
  expect_gradgradcheck("nll_loss of x squared", [](const In& v) { return nll_loss(mul(v[0], v[0]), {1, 3, 0}); }, {x});
  expect_gradgradcheck("mse_loss", [](const In& v) { return mse_loss(v[0], v[1]); }, {x, random_input({3, 5}, 51)});
  expect_gradgradcheck("dropout (times x)", [](const In& v) {
    Generator gen(5);  // the same mask at every evaluation
    return mul(dropout(v[0], 0.3, gen), v[0]);
  }, {x});
}

BOOST_AUTO_TEST_CASE(normalizations_on_every_target) {
  for_each_target([] {
    // Row lengths 7 and 13 and 3 * 5 spatial values: the kernels' vector tails.
    const Tensor x = random_input({3, 7}, 60), w = random_input({7}, 61), b = random_input({7}, 62);
    expect_gradgradcheck("layer_norm", [](const In& v) { return layer_norm(v[0], {7}, v[1], v[2]); }, {x, w, b});
    expect_gradgradcheck("layer_norm without affine", [](const In& v) { return layer_norm(v[0], {7}); }, {x});
    expect_gradgradcheck("layer_norm over two dims, weight only", [](const In& v) {
      return layer_norm(v[0], {2, 3}, v[1]);
    }, {random_input({2, 2, 3}, 63), random_input({2, 3}, 64)});
    expect_gradgradcheck("layer_norm, eps 0.1", [](const In& v) { return layer_norm(v[0], {13}, v[1], Tensor(), 0.1); },
                         {random_input({2, 13}, 65), random_input({13}, 66)});
    const Tensor xb = random_input({4, 3, 5}, 67), wb = random_input({3}, 68), bb = random_input({3}, 69);
    expect_gradgradcheck("batch_norm training (N, C, L)", [](const In& v) {
      return batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true);
    }, {xb, wb, bb});
    expect_gradgradcheck("batch_norm training (N, C), no affine", [](const In& v) {
      return batch_norm(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
    }, {random_input({5, 3}, 70)});
    const Tensor rm = random_input({3}, 71).detach(), rv = random_input({3}, 72, 0.5, 2).detach();
    expect_gradgradcheck("batch_norm eval (running statistics), times x", [rm, rv](const In& v) {
      return mul(batch_norm(v[0], rm.clone(), rv.clone(), v[1], v[2], false), v[0]);
    }, {xb, wb, bb});
    expect_gradgradcheck("group_norm", [](const In& v) { return group_norm(v[0], 2, v[1], v[2]); },
                         {random_input({2, 4, 3}, 73), random_input({4}, 74), random_input({4}, 75)});
    expect_gradgradcheck("instance norm (a group per channel)", [](const In& v) { return group_norm(v[0], 3, v[1]); },
                         {random_input({2, 3, 5}, 76), random_input({3}, 77)});
    // sync_batch_norm in a world of one rank (over several ranks: tests/dist/syncbatchnorm_test.cc).
    RankCollectives one;
    one.allgather = [](const double* p, int64_t n) { return std::vector<double>(p, p + n); };
    one.allreduce_sum = [](double*, int64_t) {};
    expect_gradgradcheck("sync_batch_norm, one rank", [one](const In& v) {
      return sync_batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], 0.1, 1e-5, one);
    }, {xb, wb, bb});
  });
}

BOOST_AUTO_TEST_CASE(the_fused_double_backward_equals_the_formula_of_recorded_ops) {
  // The last backward of a gradient penalty (grad mode off) runs the fused double-backward kernel;
  // the same pass under create_graph runs the formula of recorded ops (its reference, written as
  // PyTorch's batchnorm_double_backward composes it). Both, for d/d(x, w, b) of
  // sum((d sum(f(x) g) / d x)^2) + sum(d/dw ...)^2, agree to rounding in float64 and float32.
  const auto penalty_grads = [](const std::function<Tensor(const In&)>& f, const In& in, bool formula) {
    const Tensor y = f(in);
    const Tensor g = random_input(y.shape(), 90).to(in[0].dtype()).detach();
    const std::vector<Tensor> d = grad({sum(mul(y, g))}, in, {}, GradOptions{true, true, false});
    Tensor p = sum(mul(d[0], d[0]));
    for (size_t i = 1; i < d.size(); ++i) p = add(p, sum(mul(d[i], d[i])));
    return grad({p}, in, {}, GradOptions{std::nullopt, formula, true});  // bias: unused
  };
  struct Case { const char* name; std::function<Tensor(const In&)> f; std::vector<Shape> shapes; };
  const Tensor rm = random_input({3}, 91).detach(), rv = random_input({3}, 92, 0.5, 2).detach();
  const std::vector<Case> cases{
      {"layer_norm", [](const In& v) { return layer_norm(v[0], {7}, v[1], v[2]); }, {{5, 7}, {7}, {7}}},
      {"batch_norm training", [](const In& v) { return batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true); },
       {{4, 3, 5}, {3}, {3}}},
      {"batch_norm eval", [rm, rv](const In& v) {
         return mul(batch_norm(v[0], rm.to(v[0].dtype()), rv.to(v[0].dtype()), v[1], v[2], false), v[0]);
       }, {{4, 3, 5}, {3}, {3}}},
      {"group_norm", [](const In& v) { return group_norm(v[0], 2, v[1], v[2]); }, {{3, 4, 5}, {4}, {4}}},
      {"rms_norm", [](const In& v) { return rms_norm(v[0], {7}, v[1]); }, {{5, 7}, {7}}}};
  for (const Case& c : cases)
    for (DType dtype : {DType::Float64, DType::Float32}) {
      In in;
      uint64_t seed = 93;
      for (const Shape& s : c.shapes) in.push_back(random_input(s, seed++).to(dtype).detach().requires_grad_());
      const std::vector<Tensor> fused = penalty_grads(c.f, in, false), formula = penalty_grads(c.f, in, true);
      const double tol = dtype == DType::Float64 ? 1e-11 : 2e-4;
      for (size_t i = 0; i < in.size(); ++i) {
        BOOST_TEST_REQUIRE(fused[i].defined() == formula[i].defined(), c.name << " input " << i);
        if (fused[i].defined())
          normlab::test::expect_elements_close(std::string(c.name) + " input " + std::to_string(i),
                                               fused[i].to_vector(), formula[i].to_vector(), tol, tol);
      }
    }
}

BOOST_AUTO_TEST_CASE(third_derivatives_of_the_normalizations) {
  // gradgradcheck of the double backward itself: the second derivative along a fixed direction,
  // d/dx of <ggx, d(dx . v)/dx>, checked by gradcheck (the formula's own backward).
  const Tensor v = random_input({4, 3, 5}, 80).detach(), u = random_input({4, 3, 5}, 81).detach();
  const auto second = [v, u](const std::function<Tensor(const Tensor&)>& f) {
    return [v, u, f](const In& in) {
      const Tensor g = grad({f(in[0])}, {in[0]}, {v}, GradOptions{true, true, false})[0];
      return grad({sum(mul(g, u))}, {in[0]}, {}, GradOptions{true, true, false})[0];
    };
  };
  const Tensor x = random_input({4, 3, 5}, 82);
  normlab::test::expect_gradcheck("batch_norm's third derivative",
      second([](const Tensor& t) { return batch_norm(t, Tensor(), Tensor(), Tensor(), Tensor(), true); }), {x});
  normlab::test::expect_gradcheck("layer_norm's third derivative",
      second([](const Tensor& t) { return layer_norm(t, {5}); }), {x});
  normlab::test::expect_gradcheck("group_norm's third derivative",
      second([](const Tensor& t) { return group_norm(t, 3); }), {x});
}

BOOST_AUTO_TEST_CASE(convolutions_on_every_target) {
  // The direct (1x1), im2col and Winograd (3x3, stride 1, 8+ channels) paths, stride, padding,
  // dilation and groups; squared outputs so that every second derivative is nonzero.
  struct Case {
    const char* name;
    Shape x, w;
    Conv2dOptions o;
  };
  const std::vector<Case> cases = {
      {"3x3 pad 1", {2, 3, 5, 4}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {"stride 2, pad (0, 1)", {1, 2, 5, 6}, {3, 2, 3, 2}, {{2, 2}, {0, 1}, {1, 1}, 1}},
      {"dilation 2", {1, 2, 6, 5}, {2, 2, 2, 2}, {{1, 1}, {1, 0}, {2, 2}, 1}},
      {"groups 2", {1, 4, 4, 3}, {6, 2, 2, 2}, {{1, 1}, {0, 0}, {1, 1}, 2}},
      {"1x1 (direct)", {2, 3, 3, 3}, {5, 3, 1, 1}, {}},
      {"Winograd 3x3, 8 channels", {1, 8, 4, 4}, {8, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
  };
  for_each_target([&] {
    unsigned seed = 100;
    for (const Case& c : cases) {
      const Tensor x = random_input(c.x, ++seed), w = random_input(c.w, ++seed), b = random_input({c.w[0]}, ++seed);
      const Conv2dOptions o = c.o;
      expect_gradgradcheck(std::string("conv2d ") + c.name, [o](const In& v) {
        const Tensor y = conv2d(v[0], v[1], v[2], o);
        return mul(y, y);
      }, {x, w, b});
    }
  });
}

BOOST_AUTO_TEST_CASE(pooling_and_embedding) {
  const Tensor x = distinct_input({2, 2, 5, 4}, 120);  // no ties: the max is not at a kink
  Pool2dOptions o;
  o.kernel = {2, 2};
  const auto sq = [](const Tensor& t) { return mul(t, t); };
  expect_gradgradcheck("max_pool2d 2x2", [&](const In& v) { return sq(max_pool2d(v[0], o)); }, {x});
  Pool2dOptions o3;
  o3.kernel = {3, 2}, o3.stride = {1, 2}, o3.padding = {1, 1}, o3.dilation = {1, 1};
  expect_gradgradcheck("max_pool2d 3x2 stride (1, 2) pad 1", [&](const In& v) { return sq(max_pool2d(v[0], o3)); }, {x});
  expect_gradgradcheck("avg_pool2d 2x2", [&](const In& v) { return sq(avg_pool2d(v[0], o)); }, {x});
  Pool2dOptions oa;
  oa.kernel = {3, 3}, oa.stride = {2, 1}, oa.padding = {1, 1}, oa.count_include_pad = false;
  expect_gradgradcheck("avg_pool2d 3x3 pad 1, count_include_pad false", [&](const In& v) {
    return sq(avg_pool2d(v[0], oa));
  }, {x});
  for (std::array<int64_t, 2> size : {std::array<int64_t, 2>{1, 1}, {2, 2}, {3, 2}})
    expect_gradgradcheck("adaptive_avg_pool2d " + std::to_string(size[0]) + "x" + std::to_string(size[1]),
                         [&, size](const In& v) { return sq(adaptive_avg_pool2d(v[0], size)); }, {x});
  const Tensor w = random_input({5, 3}, 121);
  expect_gradgradcheck("embedding (repeated ids)", [&](const In& v) {
    return sq(embedding({1, 4, 1, 0, 3, 1}, {2, 3}, v[0]));
  }, {w});
}

BOOST_AUTO_TEST_CASE(rms_norm_attention_and_lstm_steps_on_every_target) {
  for_each_target([] {
    expect_gradgradcheck("rms_norm", [](const In& v) { return rms_norm(v[0], {7}, v[1]); },
                         {random_input({3, 7}, 130), random_input({7}, 131)});
    expect_gradgradcheck("rms_norm, no weight, eps 0.1", [](const In& v) { return rms_norm(v[0], {2, 3}, Tensor(), 0.1); },
                         {random_input({2, 2, 3}, 132)});
    const Tensor q = random_input({1, 2, 5, 3}, 133), k = random_input({1, 2, 5, 3}, 134), v = random_input({1, 2, 5, 3}, 135);
    for (bool causal : {false, true})
      expect_gradgradcheck(std::string("scaled_dot_product_attention causal ") + (causal ? "true" : "false"),
                           [causal](const In& in) { return scaled_dot_product_attention(in[0], in[1], in[2], causal); },
                           {q, k, v});
    expect_gradgradcheck("causal_self_attention", [](const In& in) { return causal_self_attention(in[0], 2); },
                         {random_input({2, 5, 12}, 136)});
    const Tensor gates = random_input({3, 8}, 137, -2, 2), c = random_input({3, 2}, 138);
    expect_gradgradcheck("lstm_cell", [](const In& in) { return lstm_cell(in[0], in[1]); }, {gates, c});
    expect_gradgradcheck("lstm_gates", [](const In& in) { return lstm_gates(in[0], in[1]); }, {gates, c});
    expect_gradgradcheck("lstm_output", [](const In& in) { return lstm_output(in[0], in[1]); },
                         {random_input({3, 2}, 139, 0.1, 0.9), random_input({3, 2}, 140)});
  });
}

BOOST_AUTO_TEST_CASE(third_derivatives_of_the_lstm_steps) {
  // The steps' double backward under grad mode is lstm_grad.h's formula of recorded ops: gradcheck
  // of the second derivative along fixed directions (as for the normalizations), float64.
  const Tensor gates = random_input({3, 8}, 150, -2, 2), c = random_input({3, 2}, 151);
  const Tensor v = random_input({2, 3, 2}, 152).detach(), u = random_input({3, 8}, 153).detach();
  const auto second = [v, u](const std::function<Tensor(const In&)>& f) {
    return [v, u, f](const In& in) {
      const std::vector<Tensor> g = grad({f(in)}, in, {v}, GradOptions{true, true, false});
      return grad({add(sum(mul(g[0], u)), sum(mul(g[1], g[1])))}, in, {}, GradOptions{true, true, false})[0];
    };
  };
  normlab::test::expect_gradcheck("lstm_cell's third derivative",
                                  second([](const In& in) { return lstm_cell(in[0], in[1]); }), {gates, c});
  normlab::test::expect_gradcheck("lstm_gates's third derivative",
                                  second([](const In& in) { return lstm_gates(in[0], in[1]); }), {gates, c});
  const Tensor o = random_input({3, 2}, 154, 0.1, 0.9), y = random_input({3, 2}, 155);
  const Tensor w = random_input({3, 2}, 156).detach();
  normlab::test::expect_gradcheck("lstm_output's third derivative", [w](const In& in) {
    const std::vector<Tensor> g = grad({lstm_output(in[0], in[1])}, in, {w}, GradOptions{true, true, false});
    return grad({sum(mul(mul(g[0], g[1]), g[1]))}, in, {}, GradOptions{true, true, false})[1];
  }, {o, y});
}

BOOST_AUTO_TEST_CASE(the_lstm_steps_fused_double_backward_equals_their_formula) {
  // Grad mode off: the per-element double loop; on: the same formula of recorded ops (float64, and
  // float32 against float64's values).
  const auto penalty_grads = [](const std::function<Tensor(const In&)>& f, const In& in, bool formula) {
    const Tensor y = f(in);
    const Tensor w = random_input(y.shape(), 160).to(in[0].dtype()).detach();
    const std::vector<Tensor> d = grad({sum(mul(y, w))}, in, {}, GradOptions{true, true, false});
    return grad({add(sum(mul(d[0], d[0])), sum(mul(d[1], d[1])))}, in, {}, GradOptions{std::nullopt, formula, false});
  };
  const std::vector<std::pair<const char*, std::function<Tensor(const In&)>>> ops{
      {"lstm_cell", [](const In& in) { return lstm_cell(in[0], in[1]); }},
      {"lstm_gates", [](const In& in) { return lstm_gates(in[0], in[1]); }}};
  for (const auto& [name, f] : ops)
    for (DType dtype : {DType::Float64, DType::Float32}) {
      const In in{random_input({5, 12}, 161, -2, 2).to(dtype).detach().requires_grad_(),
                  random_input({5, 3}, 162).to(dtype).detach().requires_grad_()};
      const std::vector<Tensor> fused = penalty_grads(f, in, false), formula = penalty_grads(f, in, true);
      const double tol = dtype == DType::Float64 ? 1e-12 : 1e-5;
      for (size_t i = 0; i < in.size(); ++i)
        normlab::test::expect_elements_close(std::string(name) + " input " + std::to_string(i), fused[i].to_vector(),
                                             formula[i].to_vector(), tol, tol);
    }
}

BOOST_AUTO_TEST_CASE(attention_double_backward_equals_the_composition_of_primitives) {
  // The written-out double backward of scaled_dot_product_attention and causal_self_attention against
  // attention built of primitives (matmul, a -inf mask, softmax), whose second derivatives the engine
  // composes: the gradients of a penalty sum((d <y, w> / d inputs)^2), float64. And its third
  // derivative (the formula of recorded ops) by gradcheck.
  const auto composed = [](const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
    const int64_t T = q.size(2);
    Tensor s = mul(matmul(q, transpose(k, -1, -2)), 1 / std::sqrt(static_cast<double>(q.size(3))));
    if (causal) {
      Tensor mask = zeros({T, T}, q.dtype());
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = i + 1; j < T; ++j) mask.set_flat(i * T + j, -std::numeric_limits<double>::infinity());
      s = add(s, mask);
    }
    return matmul(softmax(s, -1), v);
  };
  const auto penalty_grads = [](const std::function<Tensor(const In&)>& f, const In& in) {
    const Tensor y = f(in), w = random_input(y.shape(), 170).detach();
    const std::vector<Tensor> d = grad({sum(mul(y, w))}, in, {}, GradOptions{true, true, false});
    Tensor p = sum(mul(d[0], d[0]));
    for (size_t i = 1; i < d.size(); ++i) p = add(p, sum(mul(d[i], d[i])));
    return grad({p}, in);
  };
  const In qkv{random_input({2, 2, 5, 3}, 171), random_input({2, 2, 5, 3}, 172), random_input({2, 2, 5, 3}, 173)};
  for (bool causal : {false, true}) {
    const std::vector<Tensor> mine = penalty_grads(
        [causal](const In& in) { return scaled_dot_product_attention(in[0], in[1], in[2], causal); }, qkv);
    const std::vector<Tensor> want =
        penalty_grads([&, causal](const In& in) { return composed(in[0], in[1], in[2], causal); }, qkv);
    for (size_t i = 0; i < 3; ++i)
      normlab::test::expect_elements_close("sdpa causal " + std::to_string(causal) + " input " + std::to_string(i),
                                           mine[i].to_vector(), want[i].to_vector(), 1e-11, 1e-12);
  }
  const Tensor packed = random_input({2, 5, 12}, 174);
  const auto heads = [](const Tensor& t, int64_t i) {
    return permute(reshape(narrow(t, 2, 4 * i, 4), {2, 5, 2, 2}), {0, 2, 1, 3});
  };
  const std::vector<Tensor> mine = penalty_grads([](const In& in) { return causal_self_attention(in[0], 2); }, {packed});
  const std::vector<Tensor> want = penalty_grads([&](const In& in) {
    return reshape(permute(composed(heads(in[0], 0), heads(in[0], 1), heads(in[0], 2), true), {0, 2, 1, 3}), {2, 5, 4});
  }, {packed});
  normlab::test::expect_elements_close("causal_self_attention", mine[0].to_vector(), want[0].to_vector(), 1e-11, 1e-12);
  const Tensor u = random_input({2, 2, 5, 3}, 175).detach(), w = random_input({2, 2, 5, 3}, 176).detach();
  normlab::test::expect_gradcheck("scaled_dot_product_attention's third derivative", [u, w](const In& in) {
    const std::vector<Tensor> g = grad({scaled_dot_product_attention(in[0], in[1], in[2], true)}, in, {w},
                                       GradOptions{true, true, false});
    return grad({add(sum(mul(g[0], u)), sum(mul(g[2], g[1])))}, in, {}, GradOptions{true, true, false})[1];
  }, qkv);
}

BOOST_AUTO_TEST_CASE(gradgradcheck_catches_a_wrong_second_derivative) {
  // An op whose backward is right to first order but whose recorded gradient is wrong: gradcheck
  // passes, gradgradcheck must not.
  const auto wrong = [](const In& v) {
    const Tensor& x = v[0];
    Tensor out = mul(x, x).detach();
    return record("WrongSecond", out, {x}, [x](const Tensor& g, const Needs&) {
      // 2 x g, but with x cut from the graph: d/dx of the gradient is lost.
      return std::vector<Tensor>{mul(mul(g, x.detach()), 2.0)};
    }, Backward::Differentiable);
  };
  const Tensor x = random_input({4}, 90);
  BOOST_TEST(gradcheck(wrong, {x}));
  GradcheckOptions o;
  o.raise_exception = false;
  BOOST_TEST(!gradgradcheck(wrong, {x}, Tensor(), o));
  expect_error([&] { gradgradcheck(wrong, {x}); }, {"mismatch"});
}

BOOST_AUTO_TEST_SUITE_END()
