// The lstm_layer op: its outputs and gradients against the composition it replaces (linear, then
// lstm_recurrence), the same bits on 1, 2 and 3 threads on every Highway target (batches below and
// above the row split, where each part projects its own rows), float64 gradchecks and
// gradgradchecks with and without the bias, h0 and c0 (one part and split rows), and its input
// errors.
#include <boost/test/unit_test.hpp>
#include <initializer_list>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/parallel.h"
#include "tests/support/compare.h"
#include "tests/support/optional_inputs.h"
#include "tests/support/targets.h"
#include "tests/support/tensors.h"
#include "tests/support/threads.h"

using namespace normlab::autograd;
using normlab::test::defined_of;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::expect_gradgradcheck;
using normlab::test::expect_same_bits_on_1_2_and_3_threads;
using normlab::test::for_each_target;
using normlab::test::over_defined;
using normlab::test::output_and_grads;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// The composition the op replaces (nn::LSTM's layer before the op): (T + 1, B, H) as the op.
Tensor composed(const In& x) {
  const Tensor &in = x[0], &w_ih = x[1], &b = x[2], &w_hh = x[3];
  const int64_t T = in.size(0), B = in.size(1), I = in.size(2), H = w_hh.size(1);
  const Tensor xp = reshape(linear(reshape(in, {T * B, I}), w_ih, b), {T, B, 4 * H});
  return lstm_recurrence(xp, w_hh, x[4], x[5]);
}

Tensor op(const In& x) { return lstm_layer(x[0], x[1], x[2], x[3], x[4], x[5]); }

// The inputs x, w_ih, bias, w_hh, h0, c0 (all requiring grad).
In inputs(int64_t T, int64_t B, int64_t I, int64_t H, DType dt, unsigned seed) {
  const auto leaf = [dt](const Tensor& t) { return t.detach().to(dt).requires_grad_(); };
  return {leaf(random_input({T, B, I}, seed, -2, 2)), leaf(random_input({4 * H, I}, seed + 1) * 0.5),
          leaf(random_input({4 * H}, seed + 2)),       leaf(random_input({4 * H, H}, seed + 3) * 0.5),
          leaf(random_input({B, H}, seed + 4)),        leaf(random_input({B, H}, seed + 5))};
}

// x with the inputs at `drop` undefined (no bias: 2; no h0, c0: 4, 5).
In without(In x, std::initializer_list<size_t> drop) {
  for (size_t i : drop) x[i] = Tensor();
  return x;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lstm_layer_op)

BOOST_AUTO_TEST_CASE(matches_linear_then_lstm_recurrence) {
  for (DType dt : {DType::Float32, DType::Float64})
    for (int64_t B : {3, 20, 40})
      for (int64_t T : {1, 5})
        for (int variant = 0; variant < 3; ++variant) {
          const In all = inputs(T, B, 7, 6, dt, 10);
          const In x = variant == 0 ? all : variant == 1 ? without(all, {4, 5}) : without(all, {2, 5});
          const Tensor gout = random_input({T + 1, B, 6}, 20).to(dt).detach();
          const auto got = output_and_grads(op, x, gout), want = output_and_grads(composed, x, gout);
          const double tol = dt == DType::Float32 ? 5e-5 : 1e-11;
          BOOST_TEST_CONTEXT(dtype_name(dt) << " B " << B << " T " << T << " variant " << variant) {
            BOOST_TEST(got.size() == want.size());
            for (size_t i = 0; i < got.size() && i < want.size(); ++i)
              normlab::test::expect_elements_close("output/gradient " + std::to_string(i), got[i], want[i], tol, tol);
          }
        }
}

BOOST_AUTO_TEST_CASE(same_bits_on_1_2_and_3_threads_on_every_target) {
  const normlab::test::ThreadsGuard guard;  // every grain 0: split wherever the rows allow
  for_each_target([] {
    struct Case {
      int64_t T, B, I, H;
      bool bias;
    };
    // I = 1 and 40 around the projection's K; H = 200 on 65 rows: parts of 32 and 33 rows.
    for (const Case c : {Case{4, 5, 3, 9, true}, Case{4, 16, 1, 9, false}, Case{4, 32, 3, 9, true},
                         Case{3, 50, 40, 9, false}, Case{3, 64, 3, 9, true}, Case{2, 65, 40, 200, true}}) {
      const In all = inputs(c.T, c.B, c.I, c.H, DType::Float32, 30), x = c.bias ? all : without(all, {2});
      const Tensor gout = random_input({c.T + 1, c.B, c.H}, 40).to(DType::Float32).detach();
      expect_same_bits_on_1_2_and_3_threads(
          [&] { return output_and_grads(op, x, gout); },
          "B " + std::to_string(c.B) + " I " + std::to_string(c.I) + " H " + std::to_string(c.H));
    }
  });
}

BOOST_AUTO_TEST_CASE(gradcheck_and_gradgradcheck_on_every_target) {
  for_each_target([] {
    const In all = inputs(3, 2, 4, 3, DType::Float64, 50);
    expect_gradcheck("all inputs", op, all);
    const In bare = without(all, {2, 4, 5});
    expect_gradcheck("no bias, no state", over_defined(op, bare), defined_of(bare));
    // 16 rows: W_ih and W_hh packed (one part); 32 rows: split, each part projecting its rows.
    expect_gradcheck("16 rows, packed weights", op, inputs(2, 16, 2, 2, DType::Float64, 60));
    const In split = inputs(2, 32, 2, 2, DType::Float64, 70);
    expect_gradcheck("32 rows, split", op, split);
    expect_gradgradcheck("all inputs", op, all);
    expect_gradgradcheck("no bias, no state", over_defined(op, bare), defined_of(bare));
    const In split_h0 = without(split, {5});
    expect_gradgradcheck("32 rows, split, h0 only", over_defined(op, split_h0), defined_of(split_h0));
  });
}

BOOST_AUTO_TEST_CASE(bad_input) {
  const auto call = [](const Shape& x, const Shape& w_ih, const Shape& b, const Shape& w_hh, const Shape& h0,
                       DType c0_dtype = DType::Float32) {
    lstm_layer(zeros(x), zeros(w_ih), b.empty() ? Tensor() : zeros(b), zeros(w_hh), h0.empty() ? Tensor() : zeros(h0),
               zeros({x[1], w_hh[1]}, c0_dtype));
  };
  expect_error([&] { call({3, 2, 5}, {8, 5}, {8}, {8, 3}, {}); }, {"lstm_layer", "(4H, H)", "[8, 3]"});
  expect_error([&] { call({0, 2, 5}, {8, 5}, {8}, {8, 2}, {}); }, {"lstm_layer", "T >= 1", "[0, 2, 5]"});
  expect_error([&] { call({3, 2, 0}, {8, 0}, {8}, {8, 2}, {}); }, {"lstm_layer", "I >= 1", "[3, 2, 0]"});
  expect_error([&] { call({3, 2, 5}, {8, 4}, {8}, {8, 2}, {}); }, {"lstm_layer", "w_ih", "[8, 5]", "[8, 4]"});
  expect_error([&] { call({3, 2, 5}, {8, 5}, {4}, {8, 2}, {}); }, {"lstm_layer", "bias", "[8]", "[4]"});
  expect_error([&] { call({3, 2, 5}, {8, 5}, {8}, {8, 2}, {3, 2}); }, {"lstm_layer", "h0", "[2, 2]", "[3, 2]"});
  expect_error([&] { call({3, 2, 5}, {8, 5}, {}, {8, 2}, {}, DType::Float64); },
               {"lstm_layer", "c0", "float32", "float64"});
  expect_error([] { lstm_layer(zeros({3, 2, 5}), zeros({8, 5}, DType::Float64), Tensor(), zeros({8, 2}), Tensor(),
                               Tensor()); },
               {"lstm_layer", "w_ih", "float32", "float64"});
  expect_error([] { lstm_layer(zeros({3, 2, 5}), Tensor(), Tensor(), zeros({8, 2}), Tensor(), Tensor()); },
               {"lstm_layer", "w_ih", "defined"});
}

BOOST_AUTO_TEST_SUITE_END()
