// matmul with broadcasting over batch dims (torch.matmul for ranks >= 2): values against loops
// written here, float64 gradcheck over several broadcast patterns, empty batches, independence of
// the thread count, and the shape errors.
#include <boost/test/unit_test.hpp>
#include <cstring>
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

struct Case {
  Shape a, b, out;
};

// Broadcast patterns: one side's batch dims missing or of size 1, both sides broadcast, size-1
// output dims, patterns that change between inner and outer dims.
const std::vector<Case> kCases = {
    {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},    {{3, 4}, {2, 2, 4, 5}, {2, 2, 3, 5}},
    {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},          {{1, 3, 4}, {2, 4, 5}, {2, 3, 5}},
    {{2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 3, 5}}, {{2, 3, 1, 2, 4}, {3, 2, 4, 3}, {2, 3, 2, 2, 3}},
    {{4, 1, 2, 3}, {1, 3, 3, 2}, {4, 3, 2, 2}}, {{1, 2, 3, 4}, {1, 4, 2}, {1, 2, 3, 2}},
    {{3, 1, 1, 2, 2}, {1, 2, 2, 1}, {3, 1, 2, 2, 1}}};

// The index of a's (or b's) batch matrix for the output batch index `idx` (row-major over the
// output's batch dims): broadcasting written out, dims aligned on the right, size 1 -> index 0.
int64_t operand_matrix(const Shape& out_batch, const Shape& op_batch, int64_t idx) {
  std::vector<int64_t> full(out_batch.size());
  for (size_t d = out_batch.size(); d-- > 0;) {
    full[d] = idx % out_batch[d];
    idx /= out_batch[d];
  }
  int64_t m = 0;
  const size_t off = out_batch.size() - op_batch.size();
  for (size_t d = 0; d < op_batch.size(); ++d) m = m * op_batch[d] + (op_batch[d] == 1 ? 0 : full[d + off]);
  return m;
}

// a @ b by loops, in double.
std::vector<double> matmul_loops(const Tensor& a, const Tensor& b, const Shape& out) {
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  const Shape ob(out.begin(), out.end() - 2), ab(a.shape().begin(), a.shape().end() - 2),
      bb(b.shape().begin(), b.shape().end() - 2);
  const std::vector<double> av = a.to_vector(), bv = b.to_vector();
  std::vector<double> c;
  for (int64_t q = 0; q < numel(ob); ++q) {
    const int64_t ia = operand_matrix(ob, ab, q), ib = operand_matrix(ob, bb, q);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < K; ++p) acc += av[(ia * M + i) * K + p] * bv[(ib * K + p) * N + j];
        c.push_back(acc);
      }
  }
  return c;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(broadcast_matmul)

BOOST_AUTO_TEST_CASE(values_against_loops) {
  unsigned seed = 100;
  for (const Case& c : kCases)
    for (DType dt : {DType::Float32, DType::Float64}) {
      BOOST_TEST_CONTEXT(shape_str(c.a) << " @ " << shape_str(c.b) << " " << dtype_name(dt)) {
        const Tensor a = random_input(c.a, ++seed).detach().to(dt), b = random_input(c.b, ++seed).detach().to(dt);
        const Tensor y = matmul(a, b);
        BOOST_TEST(y.shape() == c.out);
        normlab::test::check_tensor(y, matmul_loops(a, b, c.out), dt == DType::Float32 ? 1e-5 : 1e-13, 1e-6);
      }
    }
}

BOOST_AUTO_TEST_CASE(gradcheck_broadcast_patterns) {
  unsigned seed = 200;
  for (const Case& c : kCases) {
    const Tensor a = random_input(c.a, ++seed), b = random_input(c.b, ++seed);
    expect_gradcheck("matmul " + shape_str(c.a) + " @ " + shape_str(c.b),
                     [](const In& v) { return matmul(v[0], v[1]); }, {a, b});
  }
  // One side constant: only the other's gradient is computed.
  expect_gradcheck("broadcast matmul, b constant", [](const In& v) { return matmul(v[0], v[1]); },
                   {random_input({2, 1, 3, 4}, 300), random_input({5, 4, 2}, 301).detach()});
  expect_gradcheck("broadcast matmul, a constant", [](const In& v) { return matmul(v[0], v[1]); },
                   {random_input({2, 1, 3, 4}, 302).detach(), random_input({5, 4, 2}, 303)});
}

BOOST_AUTO_TEST_CASE(empty_batches) {
  Tensor a = random_input({2, 3}, 400), b = random_input({0, 1, 3, 4}, 401);
  Tensor y = matmul(a, b);
  BOOST_TEST(y.shape() == (Shape{0, 1, 2, 4}));
  sum(y).backward();
  normlab::test::check_tensor(a.grad(), std::vector<double>(6, 0.0), 0, 0);
  BOOST_TEST(b.grad().shape() == (Shape{0, 1, 3, 4}));
  // (2, 1, 2, 0) @ (3, 0, 2): a sum over nothing, zeros of shape (2, 3, 2, 2).
  Tensor c = random_input({2, 1, 2, 0}, 402), d = random_input({3, 0, 2}, 403);
  Tensor z = matmul(c, d);
  normlab::test::check_tensor(z, std::vector<double>(24, 0.0), 0, 0);
  sum(z).backward();
  BOOST_TEST(c.grad().shape() == (Shape{2, 1, 2, 0}));
  BOOST_TEST(d.grad().shape() == (Shape{3, 0, 2}));
}

BOOST_AUTO_TEST_CASE(broadcast_grads_do_not_depend_on_thread_count) {
  // B (64, 96) shared by 2 x 4 batches, A (2, 1, 80, 64) shared by 4: both gradients sum over batches.
  const Tensor a0 = random_input({2, 1, 80, 64}, 500).detach().to(DType::Float32);
  const Tensor b0 = random_input({4, 64, 96}, 501).detach().to(DType::Float32);
  const Tensor g = random_input({2, 4, 80, 96}, 502).detach().to(DType::Float32);
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 and 3 threads
  std::vector<float> first_a, first_b;
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    Tensor a = a0.clone().detach(), b = b0.clone().detach();
    a.requires_grad_(), b.requires_grad_();
    matmul(a, b).backward(g);
    const float *pa = a.grad().data<float>(), *pb = b.grad().data<float>();
    if (first_a.empty()) {
      first_a.assign(pa, pa + a.numel());
      first_b.assign(pb, pb + b.numel());
    } else {
      BOOST_TEST(std::memcmp(first_a.data(), pa, first_a.size() * sizeof(float)) == 0, "threads " << t);
      BOOST_TEST(std::memcmp(first_b.data(), pb, first_b.size() * sizeof(float)) == 0, "threads " << t);
    }
  }
}

BOOST_AUTO_TEST_CASE(shape_errors) {
  expect_error([] { matmul(zeros({2, 1, 3, 4}), zeros({5, 3, 2})); },
               {"matmul", "(2x1x3x4)", "(5x3x2)", "4 columns", "3 rows"});
  expect_error([] { matmul(zeros({2, 3, 3, 4}), zeros({2, 4, 2})); },
               {"matmul", "(2x3x3x4)", "(2x4x2)", "batch dims [2, 3] and [2] do not broadcast"});
  expect_error([] { matmul(zeros({4}), zeros({2, 4, 2})); }, {"matmul", "rank 2 or more", "(4)", "(2x4x2)"});
  expect_error([] { matmul(zeros({2, 3, 4}), zeros({4})); }, {"matmul", "rank 2 or more", "(2x3x4)", "(4)"});
}

BOOST_AUTO_TEST_SUITE_END()
