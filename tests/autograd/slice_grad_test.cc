// Gradients of dim-0 slices (narrow, select, split along dim 0: autograd::record_rows): the values
// against hand sums, a float64 gradcheck with overlapping pieces and a full-tensor consumer, a
// gradient sum that someone else sees, the allocation count of the backward (one buffer for all
// the slices of a tensor, not one per slice), the retain_graph rules, and record_rows' errors.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::check_tensor;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

BOOST_AUTO_TEST_SUITE(slice_grad)

BOOST_AUTO_TEST_CASE(each_row_gets_the_sum_of_its_pieces_gradients) {
  // x (3, 2); pieces: x[0] * 1, x[2] * 10, x[1:3] * 100 (overlapping x[2]), and all of x * 1000.
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {3, 2});
  x.requires_grad_();
  const Tensor loss = sum(select(x, 0, 0)) + sum(select(x, 0, 2) * 10.0) + sum(narrow(x, 1, 2) * 100.0) +
                      sum(x * 1000.0);
  loss.backward();
  check_tensor(x.grad(), {1001, 1001, 1100, 1100, 1110, 1110});
  // A row no piece takes gets zeros (plus the full consumer's gradient when there is one).
  Tensor y = tensor({1, 2, 3}, {3, 1});
  y.requires_grad_();
  sum(select(y, 0, 1) * 7.0).backward();
  check_tensor(y.grad(), {0, 7, 0});
  sum(select(y, 0, -1)).backward();  // accumulates into .grad across backward calls
  check_tensor(y.grad(), {0, 7, 1});
}

BOOST_AUTO_TEST_CASE(gradcheck_pieces_of_one_tensor) {
  // Every step of a (T, B, F) tensor through its own select, as the LSTMs take their input
  // projections, with different weights per step, overlapping narrows and a full consumer; also
  // through a non-leaf (the slices then sum into the gradient of an op's output).
  const Tensor a = random_input(Shape{4, 2, 3}, 1);
  expect_gradcheck("selects of a leaf", [](const In& x) {
    std::vector<Tensor> steps;
    for (int64_t t = 0; t < 4; ++t) steps.push_back(select(x[0], 0, t) * static_cast<double>(t + 1));
    return stack(steps, 0);
  }, {a});
  expect_gradcheck("selects, narrows and the whole of a non-leaf", [](const In& x) {
    const Tensor h = x[0] * x[0];
    std::vector<Tensor> parts;
    for (int64_t t = 0; t < 4; ++t) parts.push_back(select(h, 0, t) * static_cast<double>(t - 2));
    parts.push_back(sum(narrow(h, 1, 2), {0}) * 0.5);
    parts.push_back(sum(h, {0}));
    return stack(parts, 0);
  }, {a});
  expect_gradcheck("split along dim 0", [](const In& x) {
    const std::vector<Tensor> p = split(x[0], {1, 3}, 0);
    return cat({p[1] * 2.0, p[0] * -3.0}, 0);
  }, {a});
}

BOOST_AUTO_TEST_CASE(a_gradient_sum_someone_else_sees_is_copied_before_rows_are_added) {
  // h's gradient from the reshape is a view of the caller's gradient g; the slice's gradient must
  // be added to a copy, in either order of arrival, leaving g unchanged.
  for (bool slice_first : {false, true}) {
    BOOST_TEST_CONTEXT("slice first: " << slice_first) {
      Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
      x.requires_grad_();
      const Tensor h = x * 1.0;
      const Tensor z = reshape(h, {6}), p = select(h, 0, 1);
      const Tensor root = slice_first ? cat({p, z}, 0) : cat({z, p}, 0);
      const Tensor g = tensor({1, 2, 3, 4, 5, 6, 7, 8, 9});
      root.backward(g);
      if (slice_first) {
        check_tensor(x.grad(), {4, 5, 6, 7 + 1, 8 + 2, 9 + 3});
      } else {
        check_tensor(x.grad(), {1, 2, 3, 4 + 7, 5 + 8, 6 + 9});
      }
      check_tensor(g, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    }
  }
}

BOOST_AUTO_TEST_CASE(the_slices_of_a_tensor_share_one_gradient_buffer) {
  // T row slices of one (T, N) leaf against T separate (1, N) leaves, the same ops on each: the
  // backward of the slices may allocate one buffer more (x's zero-filled gradient), not one per
  // slice (which would be T buffers of x's whole size, O(T^2 N) bytes to fill and add).
  const int64_t T = 32, N = 64;
  const auto backward_allocations = [](const std::vector<Tensor>& pieces) {
    Tensor total = sum(pieces[0] * 2.0);
    for (size_t t = 1; t < pieces.size(); ++t) total = total + sum(pieces[t] * 2.0);
    const uint64_t before = memory_stats().allocations;
    total.backward();
    return memory_stats().allocations - before;
  };
  Tensor x = random_input(Shape{T, N}, 5);
  x.requires_grad_();
  std::vector<Tensor> slices, leaves;
  for (int64_t t = 0; t < T; ++t) {
    slices.push_back(narrow(x, t, 1));
    Tensor l = random_input(Shape{1, N}, 6);
    l.requires_grad_();
    leaves.push_back(l);
  }
  const uint64_t sliced = backward_allocations(slices), separate = backward_allocations(leaves);
  BOOST_TEST(sliced <= separate + 1);
  std::vector<double> want(T * N, 2.0);
  check_tensor(x.grad(), want);
}

BOOST_AUTO_TEST_CASE(a_slice_node_keeps_the_retain_graph_rules) {
  // A second backward through a freed slice node is an error; with retain_graph it accumulates.
  Tensor x = tensor({1, 2, 3, 4}, {2, 2});
  x.requires_grad_();
  const Tensor y = sum(select(x, 0, 1) * 3.0);
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  check_tensor(x.grad(), {0, 0, 6, 6});
  expect_error([&] { y.backward(); }, {"backward", "second time"});
  const Tensor z = narrow(x * 1.0, 0, 1);
  z.backward(tensor({1, 1}, {1, 2}));
  expect_error([&] { z.backward(tensor({1, 1}, {1, 2})); }, {"backward", "second time", "SliceBackward0"});
}

BOOST_AUTO_TEST_CASE(record_rows_bad_input) {
  const Tensor x = zeros({2, 3});
  expect_error([&] { record_rows("Rows", zeros({3, 3}), x, 0); }, {"record_rows", "[3, 3]", "row 0", "[2, 3]"});
  expect_error([&] { record_rows("Rows", zeros({1, 3}), x, 2); }, {"record_rows", "row 2"});
  expect_error([&] { record_rows("Rows", zeros({1, 3}), x, -1); }, {"record_rows", "row -1"});
  expect_error([&] { record_rows("Rows", zeros({3}), x, 0); }, {"record_rows", "[3]"});
  expect_error([&] { record_rows("Rows", zeros(Shape{}), scalar(1.0), 0); }, {"record_rows"});
}

BOOST_AUTO_TEST_SUITE_END()
