// create_graph and autograd::grad: gradients with a graph of their own, differentiated again (up to
// third derivatives known in closed form), PyTorch's semantics for .grad, retain_graph, allow_unused
// and the errors, and a second derivative through a first-order-only op refused by name.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::expect_error;
using normlab::test::random_input;

namespace {

Tensor scalar64(double v) {
  Tensor t = scalar(v, DType::Float64);
  t.requires_grad_();
  return t;
}

GradOptions graph() {
  GradOptions o;
  o.create_graph = true;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(create_graph)

BOOST_AUTO_TEST_CASE(derivatives_of_x_cubed_up_to_the_third) {
  // y = x^3 at x = 2: y' = 3 x^2 = 12, y'' = 6 x = 12, y''' = 6.
  const Tensor x = scalar64(2);
  const Tensor y = mul(mul(x, x), x);
  const Tensor d1 = grad({y}, {x}, {}, graph())[0];
  BOOST_TEST(d1.item() == 12.0);
  BOOST_TEST(d1.requires_grad());
  const Tensor d2 = grad({d1}, {x}, {}, graph())[0];
  BOOST_TEST(d2.item() == 12.0);
  const Tensor d3 = grad({d2}, {x})[0];
  BOOST_TEST(d3.item() == 6.0);
  BOOST_TEST(!d3.requires_grad());  // without create_graph: no graph
  BOOST_TEST(!x.grad().defined());  // grad() never touches .grad
}

BOOST_AUTO_TEST_CASE(second_derivatives_of_the_elementwise_functions) {
  // d^2/dx^2 at x = 0.7 of exp, log, sqrt, tanh, sigmoid, pow(x, 3.5), 1/x, in closed form.
  const double v = 0.7, s = 1 / (1 + std::exp(-v)), t = std::tanh(v);
  struct Case {
    const char* name;
    Tensor (*f)(const Tensor&);
    double second;
  };
  const Case cases[] = {
      {"exp", [](const Tensor& x) { return exp(x); }, std::exp(v)},
      {"log", [](const Tensor& x) { return log(x); }, -1 / (v * v)},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, -0.25 * std::pow(v, -1.5)},
      {"tanh", [](const Tensor& x) { return tanh(x); }, -2 * t * (1 - t * t)},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, s * (1 - s) * (1 - 2 * s)},
      {"pow 3.5", [](const Tensor& x) { return pow(x, 3.5); }, 3.5 * 2.5 * std::pow(v, 1.5)},
      {"rdiv", [](const Tensor& x) { return rdiv(1, x); }, 2 / (v * v * v)},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      const Tensor x = scalar64(v);
      const Tensor d1 = grad({c.f(x)}, {x}, {}, graph())[0];
      const Tensor d2 = grad({d1}, {x})[0];
      BOOST_TEST(std::fabs(d2.item() - c.second) <= 1e-12 * std::fabs(c.second));
    }
  }
}

BOOST_AUTO_TEST_CASE(backward_with_create_graph_gives_a_grad_with_a_graph) {
  // f = sum(x^2 y): df/dx = 2 x y (a .grad with a graph); d/dy of sum(df/dx) = 2 sum(x).
  const Tensor x = random_input({3}, 1), y = random_input({3}, 2);
  const Tensor f = sum(mul(mul(x, x), y));
  BackwardOptions o;
  o.create_graph = true;
  f.backward(Tensor(), o);
  const Tensor gx = x.grad();
  BOOST_REQUIRE(gx.defined());
  BOOST_TEST(gx.requires_grad());
  for (int64_t i = 0; i < 3; ++i) BOOST_TEST(gx.flat(i) == 2 * x.flat(i) * y.flat(i));
  const Tensor gy = grad({sum(gx)}, {y})[0];
  for (int64_t i = 0; i < 3; ++i) BOOST_TEST(gy.flat(i) == 2 * x.flat(i));
  // A second create_graph backward accumulates out of place: .grad = .grad + the new gradient.
  const Tensor before = x.grad();
  sum(mul(x, y)).backward(Tensor(), o);
  for (int64_t i = 0; i < 3; ++i) BOOST_TEST(x.grad().flat(i) == before.flat(i) + y.flat(i));
  BOOST_TEST(before.flat(0) == 2 * x.flat(0) * y.flat(0));  // the old .grad is not written into
  // x.grad's graph saves x: a reference cycle (as in PyTorch), broken by clearing the .grad.
  x.set_grad(Tensor());
  y.set_grad(Tensor());
}

BOOST_AUTO_TEST_CASE(grad_follows_pytorch_semantics) {
  const Tensor x = random_input({2, 3}, 3), w = random_input({2, 3}, 4), unused = random_input({2}, 5);
  const Tensor h = mul(x, w);
  const Tensor loss = sum(mul(h, h));
  x.set_grad(ones_like(x));
  // The gradient with respect to an intermediate tensor, and to a leaf, in one call.
  const std::vector<Tensor> g = grad({loss}, {h, x}, {}, GradOptions{true, false, false});
  for (int64_t i = 0; i < 6; ++i) {
    BOOST_TEST(g[0].flat(i) == 2 * h.flat(i));
    BOOST_TEST(g[1].flat(i) == 2 * h.flat(i) * w.flat(i));
  }
  BOOST_TEST(x.grad().flat(0) == 1.0);  // untouched
  BOOST_TEST(!w.grad().defined());
  // Several outputs with their grad_outputs: the gradient of sum_i <v_i, y_i>.
  const Tensor y1 = mul(x, 2.0), y2 = mul(x, x);
  const Tensor v1 = full({2, 3}, 0.5, DType::Float64), v2 = full({2, 3}, 3.0, DType::Float64);
  const Tensor gm = grad({y1, y2}, {x}, {v1, v2}, GradOptions{true, false, false})[0];
  for (int64_t i = 0; i < 6; ++i) BOOST_TEST(std::fabs(gm.flat(i) - (1.0 + 6 * x.flat(i))) < 1e-15);
  // allow_unused: an undefined gradient instead of an error.
  expect_error([&] { grad({sum(y1)}, {unused}, {}, GradOptions{true, false, false}); },
               {"grad: input 0", "was not used", "allow_unused"});
  const std::vector<Tensor> gu = grad({sum(y1)}, {x, unused}, {}, GradOptions{true, false, true});
  BOOST_TEST(gu[0].defined());
  BOOST_TEST(!gu[1].defined());
  // An output that is itself the input: d x / d x = the grad_output.
  BOOST_TEST(grad({x}, {x}, {v1})[0].flat(0) == 0.5);
  // Errors in the caller's terms.
  expect_error([&] { grad({sum(y1)}, {x.detach()}); }, {"grad: input 0", "does not require grad"});
  expect_error([&] { grad({y1}, {x}); }, {"grad: output 0", "scalar outputs", "[2, 3]"});
  expect_error([&] { grad({x.detach()}, {x}); }, {"grad: output 0", "does not require grad"});
  expect_error([&] { grad({sum(y1)}, {x}, {v1, v2}); }, {"2 grad_outputs for 1 outputs"});
}

BOOST_AUTO_TEST_CASE(retain_graph_defaults_to_create_graph) {
  const Tensor x = random_input({4}, 6);
  const Tensor loss = sum(exp(x));
  grad({loss}, {x}, {}, graph());  // retains the graph
  BOOST_CHECK_NO_THROW(grad({loss}, {x}));  // frees it
  expect_error([&] { grad({loss}, {x}); }, {"backward through the graph a second time", "retain_graph"});
}

BOOST_AUTO_TEST_CASE(only_the_part_of_the_graph_between_outputs_and_inputs_runs) {
  // d loss / d x through a linear layer never computes d loss / d W (pruned), so a first-order-only
  // op that only the weight's branch would reach is never run.
  const Tensor x = random_input({3, 4}, 7), w = random_input({5, 4}, 8);
  const Tensor loss = sum(linear(x, w));
  const Tensor gx = grad({loss}, {x})[0];
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double col = 0;
      for (int64_t o = 0; o < 5; ++o) col += w.at({o, j});
      BOOST_TEST(std::fabs(gx.at({i, j}) - col) < 1e-14);
    }
  BOOST_TEST(!w.grad().defined());
}

BOOST_AUTO_TEST_CASE(a_second_derivative_through_a_first_order_only_op_is_refused_by_name) {
  // A user's op whose backward is first-order only (PyTorch's once_differentiable): y = x^2 with a
  // backward of raw arithmetic. Its create_graph gradient carries a node that refuses a further
  // backward, naming the op (never a silent zero), also when the further gradient is taken with
  // respect to the op's input alone.
  const auto square_op = [](const Tensor& x) {
    Tensor y = empty_like(x);
    for (int64_t i = 0; i < x.numel(); ++i) y.data<double>()[i] = x.data<double>()[i] * x.data<double>()[i];
    return record("UserSquareBackward", y, {x}, [x = x.detach()](const Tensor& g, const Needs&) {
      Tensor dx = empty_like(x);
      for (int64_t i = 0; i < x.numel(); ++i) dx.data<double>()[i] = 2 * x.data<double>()[i] * g.data<double>()[i];
      return std::vector<Tensor>{dx};
    }, Backward::FirstOrder);
  };
  const Tensor x = random_input({4, 3}, 9);
  const auto f = [&] { return sum(mul(square_op(x), x)); };
  const Tensor gx = grad({f()}, {x}, {}, graph())[0];
  BOOST_TEST(gx.requires_grad());
  expect_error([&] { grad({sum(gx)}, {x}); }, {"UserSquareBackward", "first-order only"});
  // Without create_graph the first derivative is as before: d/dx sum(x^3) = 3 x^2.
  const Tensor g1 = grad({f()}, {x})[0];
  for (int64_t i = 0; i < x.numel(); ++i)
    BOOST_TEST(std::fabs(g1.data<double>()[i] - 3 * x.data<double>()[i] * x.data<double>()[i]) < 1e-12);
}

BOOST_AUTO_TEST_CASE(first_order_results_are_unchanged_by_create_graph) {
  // The create_graph gradients (recorded ops) equal the first-order ones (raw kernels) to rounding,
  // for an MLP with BatchNorm and LayerNorm, in float32.
  Generator gen(3);
  const Tensor x = randn({8, 6}, gen), w1 = randn({7, 6}, gen), w2 = randn({3, 7}, gen);
  const Tensor bw = randn({7}, gen), bb = randn({7}, gen), lw = randn({7}, gen), lb = randn({7}, gen);
  for (const Tensor& t : {x, w1, w2, bw, bb, lw, lb}) t.requires_grad_();
  const auto loss = [&] {
    const Tensor h = relu(batch_norm(linear(x, w1), Tensor(), Tensor(), bw, bb, true));
    const Tensor z = gelu(layer_norm(h, {7}, lw, lb));
    return cross_entropy(linear(z, w2), {0, 1, 2, 0, 1, 2, 0, 1});
  };
  const std::vector<Tensor> ins{x, w1, w2, bw, bb, lw, lb};
  const std::vector<Tensor> plain = grad({loss()}, ins), recorded = grad({loss()}, ins, {}, graph());
  for (size_t i = 0; i < ins.size(); ++i)
    for (int64_t k = 0; k < ins[i].numel(); ++k)
      BOOST_TEST(std::fabs(plain[i].flat(k) - recorded[i].flat(k)) <= 1e-5 * (1 + std::fabs(plain[i].flat(k))));
}

BOOST_AUTO_TEST_CASE(a_long_chain_of_saved_inputs_is_freed_without_recursion) {
  // Each mul saves its input with its graph links; dropping the chain (or its create_graph
  // gradient) frees 200k nodes iteratively, where recursion this deep would overflow the stack.
  Tensor x = scalar(1.0), w = scalar(1.0);
  x.requires_grad_();
  w.requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = mul(y, w);
  Tensor g = grad({y}, {w}, {}, graph())[0];
  BOOST_TEST(g.item() == 200000.0);
  y = Tensor();
  g = Tensor();
  BOOST_TEST(x.is_leaf());
}

BOOST_AUTO_TEST_SUITE_END()
