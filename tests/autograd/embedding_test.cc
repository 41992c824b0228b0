// The embedding op: forward rows, the backward's sums over repeated ids (against a loop written
// here), float64 gradcheck, independence of the thread count, and every bad input.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/parallel.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"
#include "tests/support/threads.h"

using namespace normlab::autograd;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// Ids in [0, V), seeded, with repeats when n > V.
std::vector<int64_t> random_ids(int64_t n, int64_t V, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> u(0, V - 1);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t& id : ids) id = u(gen);
  return ids;
}

// Forward and weight gradient (for a gradient of the output g) against plain loops.
void check_against_loops(DType dt) {
  const int64_t V = 5, D = 3;
  const std::vector<int64_t> ids = {4, 0, 4, 2, 4, 0};  // 4 three times, 0 twice, 1 and 3 never
  const Shape s = {2, 3};
  Tensor w = random_input({V, D}, 1).detach().to(dt);
  w.requires_grad_();
  Tensor g = random_input({2, 3, D}, 2).detach().to(dt);
  Tensor y = embedding(ids, s, w);
  BOOST_TEST(y.shape() == (Shape{2, 3, D}));
  BOOST_TEST((y.dtype() == dt));
  std::vector<double> want_y, want_gw(static_cast<size_t>(V * D), 0.0);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < D; ++c) {
      want_y.push_back(w.at({ids[i], c}));
      want_gw[static_cast<size_t>(ids[i] * D + c)] += g.flat(static_cast<int64_t>(i) * D + c);
    }
  normlab::test::check_tensor(y, want_y, 0, 0);  // copies: exact
  y.backward(g);
  normlab::test::check_tensor(w.grad(), want_gw, dt == DType::Float32 ? 1e-6 : 1e-14, 0);
  BOOST_TEST(w.grad().at({1, 0}) == 0.0);  // rows never looked up get no gradient
}

}  // namespace

BOOST_AUTO_TEST_SUITE(embedding_op)

BOOST_AUTO_TEST_CASE(forward_and_grad_against_loops) {
  check_against_loops(DType::Float32);
  check_against_loops(DType::Float64);
}

BOOST_AUTO_TEST_CASE(gradcheck_repeated_ids) {
  const Tensor w = random_input({6, 4}, 3);
  const std::vector<int64_t> ids = {1, 5, 1, 1, 0, 5, 2, 1};
  expect_gradcheck("embedding (2, 4) ids", [&](const In& x) { return embedding(ids, {2, 4}, x[0]); }, {w});
  expect_gradcheck("embedding (8,) ids, times itself",
                   [&](const In& x) {
                     Tensor e = embedding(ids, {8}, x[0]);
                     return e * e;
                   },
                   {w});
  expect_gradcheck("embedding rank-0 id", [](const In& x) { return embedding({3}, {}, x[0]); }, {w});
}

BOOST_AUTO_TEST_CASE(empty_ids) {
  Tensor w = random_input({4, 3}, 4);
  Tensor y = embedding({}, {2, 0}, w);
  BOOST_TEST(y.shape() == (Shape{2, 0, 3}));
  sum(y).backward();
  BOOST_TEST(w.grad().shape() == (Shape{4, 3}));
  for (double v : w.grad().to_vector()) BOOST_TEST(v == 0.0);
}

BOOST_AUTO_TEST_CASE(grad_does_not_depend_on_thread_count) {
  // Big enough to be split by columns (n * D >= 2^15), with many repeats of few ids.
  const int64_t V = 7, D = 300, n = 400;
  const std::vector<int64_t> ids = random_ids(n, V, 5);
  const Tensor g = random_input({n, D}, 6).detach().to(DType::Float32);
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 and 3 threads
  std::vector<float> first;
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    Tensor w = random_input({V, D}, 7).detach().to(DType::Float32);
    w.requires_grad_();
    embedding(ids, {n}, w).backward(g);
    const float* p = w.grad().data<float>();
    if (first.empty()) first.assign(p, p + V * D);
    else BOOST_TEST(std::memcmp(first.data(), p, first.size() * sizeof(float)) == 0, "threads " << t);
  }
}

BOOST_AUTO_TEST_CASE(bad_inputs) {
  const Tensor w = random_input({10, 3}, 8);
  expect_error([&] { embedding({1, 10, 2}, {3}, w); }, {"id 10", "position (1,)", "10 rows", "0 to 9"});
  expect_error([&] { embedding({1, 2, 3, -1}, {2, 2}, w); }, {"id -1", "position (1, 1)", "[2, 2]", "10 rows"});
  expect_error([&] { embedding({1, 2, 3}, {2, 2}, w); }, {"ids_shape [2, 2]", "4 ids", "3 ids were given"});
  expect_error([&] { embedding({1}, {1}, random_input({10}, 9)); }, {"2-D", "[10]"});
  expect_error([&] { embedding({0}, {1}, random_input({0, 3}, 9)); }, {"id 0", "0 rows"});
}

BOOST_AUTO_TEST_SUITE_END()
