// The lstm_cell op: its state against the same step built from primitive ops (sigmoid, tanh, mul,
// add on narrowed gates) in float32 and float64, float64 gradchecks through h, c and both, and its
// shape errors.
#include <boost/test/unit_test.hpp>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// The step from primitives: returns {h, c}.
std::vector<Tensor> step_from_primitives(const Tensor& G, const Tensor& c_prev) {
  const int64_t H = G.shape()[1] / 4;
  const std::vector<Tensor> p = split(G, {H, H, H, H}, 1);
  const Tensor i = sigmoid(p[0]), f = sigmoid(p[1]), g = tanh(p[2]), o = sigmoid(p[3]);
  const Tensor c = f * c_prev + i * g;
  return {o * tanh(c), c};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lstm_op)

BOOST_AUTO_TEST_CASE(matches_primitive_ops) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      const Tensor G = (random_input({3, 4 * 5}, 1) * 3.0).detach().to(dt), c_prev = random_input({3, 5}, 2).detach().to(dt);
      const Tensor state = lstm_cell(G, c_prev);
      BOOST_TEST(state.shape() == Shape({2, 3, 5}));
      const std::vector<Tensor> want = step_from_primitives(G, c_prev);
      const double tol = dt == DType::Float32 ? 1e-6 : 1e-14;
      normlab::test::check_close(select(state, 0, 0).to_vector(), want[0].to_vector(), 15, tol, tol);
      normlab::test::check_close(select(state, 0, 1).to_vector(), want[1].to_vector(), 15, tol, tol);
    }
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_h_c_and_both) {
  const Tensor G = random_input({3, 4 * 4}, 3, -2, 2), c_prev = random_input({3, 4}, 4);
  expect_gradcheck("state", [](const In& x) { return lstm_cell(x[0], x[1]); }, {G, c_prev});
  expect_gradcheck("h only", [](const In& x) { return select(lstm_cell(x[0], x[1]), 0, 0); }, {G, c_prev});
  expect_gradcheck("c only", [](const In& x) { return select(lstm_cell(x[0], x[1]), 0, 1); }, {G, c_prev});
  expect_gradcheck("c_prev constant", [](const In& x) { return lstm_cell(x[0], x[1]); }, {G, c_prev.detach()});
  expect_gradcheck("gates constant", [](const In& x) { return lstm_cell(x[0], x[1]); }, {G.detach(), c_prev});
  // Two steps: the second reads the first's h (through a weight) and c.
  const Tensor W = random_input({4 * 4, 4}, 5);
  expect_gradcheck("two steps", [](const In& x) {
    const Tensor s1 = lstm_cell(x[0], x[1]);
    return lstm_cell(x[0] + matmul(select(s1, 0, 0), transpose(x[2], 0, 1)), select(s1, 0, 1));
  }, {G, c_prev, W});
}

// lstm_output(o, c) after lstm_gates gives lstm_cell's h (the same kernels' arithmetic); gradchecks
// of both halves, and through a LayerNorm between them (the LN-LSTM's output).
BOOST_AUTO_TEST_CASE(halves) {
  const Tensor G = random_input({3, 4 * 4}, 6, -2, 2), c_prev = random_input({3, 4}, 7);
  const Tensor s = lstm_gates(G, c_prev), full = lstm_cell(G, c_prev);
  BOOST_TEST(select(s, 0, 1).to_vector() == select(full, 0, 1).to_vector());
  BOOST_TEST(select(s, 0, 0).to_vector() == sigmoid(split(G, {12, 4}, 1)[1]).to_vector(),
             boost::test_tools::tolerance(1e-15));
  BOOST_TEST(lstm_output(select(s, 0, 0), select(s, 0, 1)).to_vector() == select(full, 0, 0).to_vector());
  expect_gradcheck("gates: o and c", [](const In& x) { return lstm_gates(x[0], x[1]); }, {G, c_prev});
  expect_gradcheck("gates: c only", [](const In& x) { return select(lstm_gates(x[0], x[1]), 0, 1); }, {G, c_prev});
  expect_gradcheck("gates: o only", [](const In& x) { return select(lstm_gates(x[0], x[1]), 0, 0); }, {G, c_prev});
  const Tensor o = random_input({3, 4}, 8, 0, 1), y = random_input({3, 4}, 9, -2, 2);
  expect_gradcheck("output", [](const In& x) { return lstm_output(x[0], x[1]); }, {o, y});
  expect_gradcheck("gates, LayerNorm, output", [](const In& x) {
    const Tensor st = lstm_gates(x[0], x[1]);
    return lstm_output(select(st, 0, 0), layer_norm(select(st, 0, 1), {4}));
  }, {G, c_prev});
}

BOOST_AUTO_TEST_CASE(bad_input) {
  expect_error([] { lstm_gates(zeros({3, 10}), zeros({3, 2})); }, {"lstm_gates", "(B, 4H)", "[3, 10]"});
  expect_error([] { lstm_output(zeros({3, 2}), zeros({3, 3})); }, {"lstm_output", "[3, 2]", "[3, 3]"});
  expect_error([] { lstm_output(zeros({3, 2}), zeros({3, 2}, DType::Float64)); }, {"lstm_output", "float64"});
  expect_error([] { lstm_cell(zeros({3, 10}), zeros({3, 2})); }, {"lstm_cell", "(B, 4H)", "[3, 10]"});
  expect_error([] { lstm_cell(zeros({3, 4, 2}), zeros({3, 2})); }, {"lstm_cell", "[3, 4, 2]"});
  expect_error([] { lstm_cell(zeros({3, 8}), zeros({2, 2})); }, {"lstm_cell", "c_prev", "[3, 2]", "[2, 2]", "[3, 8]"});
  expect_error([] { lstm_cell(zeros({3, 8}), zeros({3, 2}, DType::Float64)); }, {"lstm_cell", "float32", "float64"});
}

BOOST_AUTO_TEST_SUITE_END()
