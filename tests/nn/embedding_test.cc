// nn::Embedding: repr, state_dict names, the N(0, 1) init statistics, lookups from a vector and from
// a float tensor, float64 gradcheck, and bad sizes and ids.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "nn/nn.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::test::expect_error;

BOOST_AUTO_TEST_SUITE(embedding_module)

BOOST_AUTO_TEST_CASE(repr_and_state_dict) {
  Generator gen(0);
  Embedding e(10, 3, gen);
  BOOST_TEST(e.repr() == "Embedding(10, 3)");
  BOOST_TEST(e.str() == "Embedding(10, 3)");
  const NamedTensors sd = e.state_dict();
  BOOST_REQUIRE_EQUAL(sd.size(), 1u);
  BOOST_TEST(sd[0].first == "weight");
  BOOST_TEST(sd[0].second.is_same(e.weight()));
  BOOST_TEST(e.weight().shape() == (Shape{10, 3}));
  BOOST_TEST(e.weight().requires_grad());
  BOOST_TEST(e.num_parameters() == 30);
  BOOST_TEST((e.weight().dtype() == DType::Float32));
  Embedding d(4, 2, gen, DType::Float64);
  BOOST_TEST((d.weight().dtype() == DType::Float64));
}

BOOST_AUTO_TEST_CASE(init_is_standard_normal) {
  Generator gen(1);
  Embedding e(400, 50, gen);  // 20000 draws: mean within 4 standard errors (0.007) of 0
  const std::vector<double> w = e.weight().to_vector();
  double mean = 0, sq = 0;
  for (double v : w) mean += v;
  mean /= static_cast<double>(w.size());
  for (double v : w) sq += (v - mean) * (v - mean);
  const double stdev = std::sqrt(sq / static_cast<double>(w.size() - 1));
  BOOST_TEST(std::fabs(mean) < 4 / std::sqrt(20000.0));
  BOOST_TEST(std::fabs(stdev - 1) < 0.03);
  // Not uniform-looking: about 31.7% of N(0, 1) draws lie beyond 1 in absolute value.
  double beyond = 0;
  for (double v : w) beyond += std::fabs(v) > 1;
  BOOST_TEST(std::fabs(beyond / w.size() - 0.3173) < 0.015);
  // The same seed gives the same table; another seed another one.
  Generator same(1), other(2);
  BOOST_TEST(Embedding(400, 50, same).weight().to_vector() == w);
  BOOST_TEST(Embedding(400, 50, other).weight().to_vector() != w);
}

BOOST_AUTO_TEST_CASE(lookups) {
  Generator gen(3);
  Embedding e(6, 4, gen);
  const std::vector<int64_t> ids = {5, 0, 5, 2};
  const Tensor y = e.forward(ids, {2, 2});
  BOOST_TEST(y.shape() == (Shape{2, 2, 4}));
  std::vector<double> want;
  for (int64_t id : ids)
    for (int64_t c = 0; c < 4; ++c) want.push_back(e.weight().at({id, c}));
  normlab::test::check_tensor(y, want, 0, 0);
  // The same ids as a float tensor (any dtype), through the Module call operator.
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor t = tensor({5, 0, 5, 2}, {2, 2}, dt);
    normlab::test::check_tensor(e(t), want, 0, 0);
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_float64) {
  Generator gen(4);
  Embedding e(5, 3, gen, DType::Float64);
  const Tensor ids = tensor({4, 1, 4, 4, 0, 1}, {3, 2}, DType::Float64);
  // gradcheck perturbs its inputs in place, so passing the weight perturbs the module's table.
  normlab::test::expect_gradcheck(
      "Embedding(5, 3)", [&](const std::vector<Tensor>& in) { return square(e(ids)); }, {e.weight()});
}

BOOST_AUTO_TEST_CASE(bad_sizes_and_ids) {
  Generator gen(5);
  expect_error([&] { Embedding(-1, 3, gen); }, {"Embedding", "num_embeddings=-1"});
  expect_error([&] { Embedding(3, -2, gen); }, {"Embedding", "embedding_dim=-2"});
  Embedding e(10, 3, gen);
  expect_error([&] { e.forward({1, 10}, {2}); }, {"Embedding(10, 3)", "id 10", "position (1,)", "10 rows"});
  expect_error([&] { e.forward({-3}, {1}); }, {"Embedding(10, 3)", "id -3", "10 rows"});
  expect_error([&] { e.forward({1, 2}, {3}); }, {"Embedding(10, 3)", "3 ids", "2 ids were given"});
  expect_error([&] { e(tensor({1, 2, 2.5, 3}, {2, 2})); }, {"Embedding(10, 3)", "whole numbers", "2.5", "position (1, 0)"});
  expect_error([&] { e(tensor({1, std::nan("")}, {2})); }, {"whole numbers", "nan", "position (1,)"});
  expect_error([&] { e(tensor({1, 12}, {2})); }, {"Embedding(10, 3)", "id 12", "position (1,)", "10 rows"});
  expect_error([&] { e(tensor({1e20}, {1})); }, {"Embedding(10, 3)", "position (0,)", "out of range", "10 rows"});
}

BOOST_AUTO_TEST_SUITE_END()
