// The autograd engine: accumulation, retain_graph, freed graphs, no_grad, deep chains.
#include <boost/test/unit_test.hpp>

#include "autograd/autograd.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using normlab::Error;
using normlab::test::check_tensor;

BOOST_AUTO_TEST_SUITE(engine)

BOOST_AUTO_TEST_CASE(gradients_accumulate_across_backward_calls) {
  Tensor x = tensor({1, 2, 3});
  x.requires_grad_();
  Tensor y = sum(mul(x, x));  // dy/dx = 2x
  y.backward(Tensor(), /*retain_graph=*/true);
  check_tensor(x.grad(), {2, 4, 6});
  y.backward();
  check_tensor(x.grad(), {4, 8, 12});
}

BOOST_AUTO_TEST_CASE(second_backward_through_freed_graph_is_an_error) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  Tensor y = sum(exp(x));
  y.backward();
  BOOST_CHECK_EXCEPTION(y.backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("second time") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(non_scalar_backward_needs_a_gradient) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  Tensor y = mul(x, 2.0);
  BOOST_CHECK_EXCEPTION(y.backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("[2]") != std::string::npos;
  });
  y.backward(tensor({1, 10}));
  check_tensor(x.grad(), {2, 20});
}

BOOST_AUTO_TEST_CASE(no_grad_records_nothing) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  Tensor y;
  {
    NoGradGuard g;
    y = mul(x, x);
  }
  BOOST_TEST(!y.requires_grad());
  BOOST_TEST(!y.grad_fn());
  BOOST_TEST(grad_enabled());
}

BOOST_AUTO_TEST_CASE(million_op_chain_backpropagates_without_recursion) {
  Tensor x = scalar(1.0);
  x.requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 1000000; ++i) y = add(y, 1e-6);
  y.backward();
  BOOST_TEST(x.grad().item() == 1.0);
  y = Tensor();  // frees a million nodes, iteratively
  BOOST_TEST(x.grad().item() == 1.0);
}

BOOST_AUTO_TEST_CASE(linear_cross_entropy_gradcheck) {
  Generator gen(1);
  Tensor x = randn({4, 3}, gen, 0, 1, DType::Float64);
  Tensor w = randn({5, 3}, gen, 0, 1, DType::Float64);
  Tensor b = randn({5}, gen, 0, 1, DType::Float64);
  x.requires_grad_(), w.requires_grad_(), b.requires_grad_();
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) {
    return cross_entropy(linear(in[0], in[1], in[2]), {0, 4, 2, 1});
  }, {x, w, b}));
}

BOOST_AUTO_TEST_SUITE_END()
