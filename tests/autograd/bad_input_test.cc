// Every bad input of the autograd core gives a normlab::Error whose message names the operation
// and the shapes or values involved (never a crash, an abort or undefined behaviour).
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::expect_error;

BOOST_AUTO_TEST_SUITE(bad_input)

BOOST_AUTO_TEST_CASE(elementwise_shape_mismatch) {
  const Tensor a = zeros({2, 3}), b = zeros({2, 4});
  expect_error([&] { add(a, b); }, {"add", "[2, 3]", "[2, 4]"});
  expect_error([&] { sub(a, b); }, {"sub", "[2, 3]", "[2, 4]"});
  expect_error([&] { mul(a, b); }, {"mul", "[2, 3]", "[2, 4]"});
  expect_error([&] { div(a, b); }, {"div", "[2, 3]", "[2, 4]"});
  expect_error([&] { a + b; }, {"add", "[2, 3]", "[2, 4]"});
}

BOOST_AUTO_TEST_CASE(shapes_too_large_to_count_are_refused_before_allocating) {
  expect_error([] { empty({10000000000, 10000000000}); },
               {"empty: shape [10000000000, 10000000000] has more than 2^60 elements"});
  expect_error([] { zeros({int64_t{1} << 31, int64_t{1} << 31, 4}); }, {"more than 2^60 elements"});
  BOOST_TEST(empty({0, int64_t{1} << 62}).numel() == 0);  // an empty tensor of any other sizes is fine
}

BOOST_AUTO_TEST_CASE(shapes_that_do_not_broadcast) {
  // (3, 2) against (2, 3, 4): aligned from the right, 2 meets 4.
  expect_error([] { mul(zeros({3, 2}), zeros({2, 3, 4})); }, {"mul", "[3, 2]", "[2, 3, 4]", "broadcast"});
  expect_error([] { add(zeros({5}), zeros({3, 4})); }, {"add", "[5]", "[3, 4]"});
  expect_error([] { expand(zeros({3, 2}), {3, 4}); }, {"expand", "[3, 2]", "[3, 4]"});
  expect_error([] { expand(zeros({3, 2}), {2}); }, {"expand", "[3, 2]", "[2]"});
  expect_error([] { expand(zeros({3}), {-1, 3}); }, {"expand", "[3]", "[-1, 3]"});
  expect_error([] { mse_loss(zeros({2, 3}), zeros({3, 2})); }, {"mse_loss", "[2, 3]", "[3, 2]"});
}

BOOST_AUTO_TEST_CASE(dim_out_of_range) {
  const Tensor x = zeros({2, 3, 4});
  expect_error([&] { sum(x, {3}); }, {"sum", "dim 3", "rank 3"});
  expect_error([&] { sum(x, {-4}, true); }, {"sum", "dim -4", "rank 3"});
  expect_error([&] { mean(x, {0, 5}); }, {"mean", "dim 5", "rank 3"});
  expect_error([&] { var(x, {7}); }, {"var", "dim 7", "rank 3"});
  expect_error([&] { max(x, {3}); }, {"max", "dim 3", "rank 3"});
  expect_error([&] { softmax(x, 3); }, {"softmax", "dim 3", "rank 3"});
  expect_error([&] { log_softmax(x, -4); }, {"log_softmax", "dim -4", "rank 3"});
  expect_error([&] { transpose(x, 0, 3); }, {"transpose", "dim 3", "rank 3"});
  expect_error([&] { squeeze(x, 3); }, {"squeeze", "dim 3", "rank 3"});
  expect_error([&] { unsqueeze(x, 4); }, {"unsqueeze", "dim 4", "rank 3", "[-4, 3]"});
  expect_error([&] { unsqueeze(x, -5); }, {"unsqueeze", "dim -5"});
  expect_error([&] { permute(x, {0, 1, 3}); }, {"permute", "dim 3"});
  expect_error([&] { flatten(x, 0, 3); }, {"flatten", "dim 3"});
  expect_error([&] { x.size(3); }, {"size", "dim 3", "rank 3"});
  expect_error([] { scalar(1).size(0); }, {"size", "rank 0"});
  expect_error([] { sum(scalar(1), {1}); }, {"sum", "dim 1", "rank 0"});
  expect_error([] { squeeze(scalar(1), 2); }, {"squeeze", "dim 2", "rank 0"});
}

BOOST_AUTO_TEST_CASE(bad_dim_lists) {
  const Tensor x = zeros({2, 3});
  expect_error([&] { sum(x, {1, -1}); }, {"sum", "dim 1", "more than once"});
  expect_error([&] { permute(x, {0}); }, {"permute", "[2, 3]"});
  expect_error([&] { permute(x, {1, 1}); }, {"permute", "dim 1", "twice"});
  expect_error([&] { flatten(zeros({2, 3, 4}), 2, 1); }, {"flatten", "start_dim 2", "end_dim 1"});
}

BOOST_AUTO_TEST_CASE(mixed_dtypes) {
  const Tensor f = zeros({2, 2}), d = zeros({2, 2}, DType::Float64);
  expect_error([&] { add(f, d); }, {"add", "float32", "float64"});
  expect_error([&] { mul(d, f); }, {"mul", "float64", "float32"});
  expect_error([&] { matmul(f, d); }, {"matmul", "float32", "float64"});
  expect_error([&] { linear(f, d); }, {"linear", "float32", "float64"});
  expect_error([&] { mse_loss(f, d); }, {"mse_loss", "float32", "float64"});
  expect_error([&] { copy_(f, d); }, {"copy_", "float32", "float64"});
  expect_error([&] { add_(f, d); }, {"add_", "float32", "float64"});
  expect_error([&] { f.data<double>(); }, {"float64", "float32"});
}

BOOST_AUTO_TEST_CASE(reshape_to_a_different_element_count) {
  const Tensor x = zeros({2, 3});
  expect_error([&] { reshape(x, {4, 2}); }, {"reshape", "[4, 2]", "6"});
  expect_error([&] { reshape(x, {-1, 4}); }, {"reshape", "4", "6"});
  expect_error([&] { reshape(x, {-1, -1}); }, {"reshape", "-1"});
  expect_error([&] { reshape(x, {-2, 3}); }, {"reshape", "-2"});
  expect_error([] { reshape(zeros({0}), {-1, 0}); }, {"reshape", "0"});
}

BOOST_AUTO_TEST_CASE(matmul_shapes) {
  expect_error([] { matmul(zeros({2, 3}), zeros({4, 5})); },
               {"matmul: shapes (2x3) and (4x5) cannot be multiplied"});
  expect_error([] { matmul(zeros({2, 2, 3}), zeros({3, 3, 5})); }, {"matmul", "(2x2x3)", "(3x3x5)"});
  expect_error([] { matmul(zeros({2, 3}), zeros({2, 4, 5})); }, {"matmul", "(2x3)", "(2x4x5)"});
  expect_error([] { matmul(zeros({3}), zeros({3, 2})); }, {"matmul", "(3)", "(3x2)"});
  expect_error([] { matmul(zeros({2, 3, 3, 4}), zeros({4, 4, 2})); }, {"matmul", "(2x3x3x4)", "(4x4x2)", "[2, 3]", "[4]"});
  expect_error([] { linear(zeros({4, 3}), zeros({5, 2})); }, {"linear", "[4, 3]", "[5, 2]"});
  expect_error([] { linear(zeros({4, 3}), zeros({5, 3}), zeros({4})); }, {"linear", "[5]", "[4]"});
  expect_error([] { linear(zeros({4, 3}), zeros({3})); }, {"linear", "[3]"});
}

BOOST_AUTO_TEST_CASE(backward_errors) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  const Tensor y = mul(x, x);
  expect_error([&] { y.backward(); }, {"backward", "scalar", "[2]"});
  expect_error([&] { y.backward(zeros({3})); }, {"backward", "[3]", "[2]"});
  expect_error([&] { y.backward(zeros({2}, DType::Float64)); }, {"backward", "float64", "float32"});
  expect_error([] { tensor({1, 2}).backward(); }, {"backward", "does not require grad"});
  expect_error([] { Tensor().backward(); }, {"undefined"});
}

BOOST_AUTO_TEST_CASE(backward_through_a_freed_graph) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  const Tensor y = sum(mul(x, exp(x)));
  y.backward();
  expect_error([&] { y.backward(); }, {"backward", "second time", "retain_graph"});
  // A new graph built on the same leaf is fine.
  sum(mul(x, x)).backward();
}

BOOST_AUTO_TEST_CASE(gradcheck_float32_inputs) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  expect_error([&] { gradcheck([](const std::vector<Tensor>& v) { return exp(v[0]); }, {x}); },
               {"gradcheck", "float32", "float64"});
  expect_error([] { gradcheck([](const std::vector<Tensor>& v) { return v[0]; }, {zeros({2}, DType::Float64)}); },
               {"gradcheck", "requires grad"});
  Tensor d = tensor({1, 2}, DType::Float64);
  d.requires_grad_();
  expect_error([&] { gradcheck([](const std::vector<Tensor>& v) { return v[0].to(DType::Float32); }, {d}); },
               {"gradcheck", "float64"});
}

BOOST_AUTO_TEST_CASE(cross_entropy_targets) {
  const Tensor logits = zeros({3, 4});
  expect_error([&] { cross_entropy(logits, {0, 4, 1}); }, {"cross_entropy", "target 4", "4 classes"});
  expect_error([&] { cross_entropy(logits, {0, -1, 1}); }, {"cross_entropy", "target -1"});
  expect_error([&] { cross_entropy(logits, {0, 1}); }, {"cross_entropy", "3", "got 2"});
  expect_error([&] { cross_entropy(zeros({3}), {0}); }, {"cross_entropy", "[3]"});
  expect_error([&] { nll_loss(logits, {0, 1, 7}); }, {"nll_loss", "target 7"});
  expect_error([&] { nll_loss(logits, {0, 1, 2, 3}); }, {"nll_loss", "3", "got 4"});
}

BOOST_AUTO_TEST_CASE(in_place_on_a_tensor_that_requires_grad) {
  Tensor w = zeros({3});
  w.requires_grad_();
  expect_error([&] { fill_(w, 1); }, {"fill_", "requires grad"});
  expect_error([&] { copy_(w, ones({3})); }, {"copy_", "requires grad"});
  expect_error([&] { add_(w, ones({3})); }, {"add_", "requires grad"});
  expect_error([&] { mul_(w, 2); }, {"mul_", "requires grad"});
  {  // allowed under no_grad, as an optimizer step does
    NoGradGuard g;
    add_(w, ones({3}), 0.5);
  }
  BOOST_TEST(w.flat(2) == 0.5);
  const Tensor y = mul(w, 2.0);
  expect_error([&] { y.requires_grad_(false); }, {"requires_grad_", "leaf"});
}

BOOST_AUTO_TEST_CASE(element_access) {
  const Tensor x = arange(6);
  expect_error([&] { x.item(); }, {"item", "6 elements", "[6]"});
  expect_error([&] { x.flat(6); }, {"index 6", "6 elements"});
  expect_error([&] { x.set_flat(-1, 0); }, {"index -1"});
  expect_error([&] { x.at({6}); }, {"at", "index 6", "size 6"});
  expect_error([&] { x.at({0, 0}); }, {"at", "2 indices", "rank 1"});
  expect_error([] { Tensor().shape(); }, {"undefined"});
  expect_error([] { add(Tensor(), zeros({1})); }, {"undefined"});
  expect_error([&] { x.set_grad(zeros({5})); }, {"set_grad", "[6]", "[5]"});
}

BOOST_AUTO_TEST_CASE(factories_and_slices) {
  expect_error([] { zeros({2, -3}); }, {"negative", "[2, -3]"});
  expect_error([] { tensor({1, 2, 3}, {2, 2}); }, {"tensor", "3 values", "[2, 2]"});
  expect_error([] { arange(0, 1, 0); }, {"arange", "step"});
  expect_error([] { arange(0, 5, -1); }, {"arange", "step"});
  expect_error([] { narrow(zeros({4, 2}), 3, 2); }, {"narrow", "size 4"});
  expect_error([] { narrow(zeros({4, 2}), -1, 2); }, {"narrow", "-1"});
  expect_error([] { narrow(scalar(1), 0, 1); }, {"narrow", "rank-0"});
  expect_error([] { max(zeros({2, 0}), {1}); }, {"max", "size 0", "[2, 0]"});
}

BOOST_AUTO_TEST_SUITE_END()
