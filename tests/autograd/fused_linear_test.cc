// linear_add and gelu_linear against the ops they fuse: the same bits in float32, forward and every
// gradient, on shapes whose products take the blocked GEMM (the epilogue in its stores) and the
// small paths (the epilogue as a pass after the product); and their bad input.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::expect_error;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
}

// Inputs with gradients: x (rows, in), W (out, in), b (out), r (rows, out).
std::vector<Tensor> inputs(int64_t rows, int64_t in, int64_t out, uint64_t seed) {
  Generator gen(seed);
  std::vector<Tensor> v = {randn({rows, in}, gen), randn({out, in}, gen), randn({out}, gen), randn({rows, out}, gen)};
  for (Tensor& t : v) t.requires_grad_(true);
  return v;
}

// y and the gradients of every input for sum(y * c), c a fixed random tensor.
std::vector<Tensor> run(const std::vector<Tensor>& v, bool fused, bool gelu_in, bool residual) {
  for (const Tensor& t : v) t.set_grad(Tensor());
  Tensor y;
  if (fused) {
    y = gelu_in ? gelu_linear(v[0], v[1], v[2], residual ? v[3] : Tensor()) : linear_add(v[0], v[1], v[2], v[3]);
  } else {
    y = linear(gelu_in ? gelu(v[0]) : v[0], v[1], v[2]);
    if (residual) y = add(v[3], y);
  }
  Generator gen(99);
  const Tensor c = randn(y.shape(), gen);
  sum(mul(y, c)).backward();
  std::vector<Tensor> out = {y.detach()};
  for (const Tensor& t : v) out.push_back(t.grad());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fused_linear)

BOOST_AUTO_TEST_CASE(the_same_bits_as_the_composed_ops) {
  struct Case { int64_t rows, in, out; };
  // The GPT's MLP and attention projections (blocked), few rows (dot products), a ragged shape.
  for (const Case& c : {Case{256, 512, 128}, Case{256, 128, 128}, Case{3, 20, 7}, Case{37, 33, 65}})
    for (bool gelu_in : {true, false})
      for (bool residual : {true, false}) {
        if (!gelu_in && !residual) continue;
        BOOST_TEST_CONTEXT("rows " << c.rows << " in " << c.in << " out " << c.out << " gelu " << gelu_in
                                   << " residual " << residual) {
          const std::vector<Tensor> v = inputs(c.rows, c.in, c.out, 7 + c.rows);
          const std::vector<Tensor> want = run(v, false, gelu_in, residual), got = run(v, true, gelu_in, residual);
          for (size_t i = 0; i < want.size(); ++i) {
            if (!residual && i == 4) continue;  // r takes no part
            BOOST_TEST_CONTEXT("output " << i) { BOOST_TEST(same_bits(got[i], want[i])); }
          }
        }
      }
}

BOOST_AUTO_TEST_CASE(a_residual_of_the_wrong_shape_or_dtype_is_an_error) {
  expect_error([] { linear_add(zeros({4, 3}), zeros({5, 3}), zeros({5}), zeros({4, 4})); },
               {"residual", "[4, 5]", "[4, 4]"});
  expect_error([] { gelu_linear(zeros({4, 3}), zeros({5, 3}), zeros({5}), zeros({4, 5}, DType::Float64)); },
               {"residual", "float32", "float64"});
  expect_error([] { linear_add(zeros({4, 3}), zeros({5, 3}), zeros({5}), Tensor()); }, {"linear_add", "residual"});
}

BOOST_AUTO_TEST_SUITE_END()
