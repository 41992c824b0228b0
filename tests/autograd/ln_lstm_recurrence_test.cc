// The ln_lstm_recurrence op: its outputs and gradients against the step-by-step composition
// (xp_t + layer_norm(linear(h, w_hh)), lstm_gates, layer_norm of c, lstm_output), the same bits on
// 1, 2 and 3 threads on every Highway target (batches below and above the row split), float64
// gradchecks and gradgradchecks with and without h0 and c0, and its input errors.
#include <boost/test/unit_test.hpp>
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

constexpr double kEps = 1e-5;

// The composition the op replaces (nn::LayerNormLSTM's steps before the op): (T + 1, B, H) as the op.
Tensor composed(const In& x) {
  const Tensor &xp = x[0], &w = x[1], &gh = x[2], &gc = x[3], &bc = x[4], &h0 = x[5], &c0 = x[6];
  const int64_t T = xp.size(0), B = xp.size(1), H = w.size(1);
  Tensor h = h0.defined() ? h0 : T == 1 ? zeros({B, H}, xp.dtype()) : Tensor();
  Tensor c = c0.defined() ? c0 : zeros({B, H}, xp.dtype());
  std::vector<Tensor> rows;
  for (int64_t t = 0; t < T; ++t) {
    const Tensor xt = select(xp, 0, t);
    const Tensor G = h.defined() ? xt + layer_norm(linear(h, w), {4 * H}, gh, Tensor(), kEps) : xt;
    const Tensor st = lstm_gates(G, c);
    c = select(st, 0, 1);
    h = lstm_output(select(st, 0, 0), layer_norm(c, {H}, gc, bc, kEps));
    rows.push_back(h);
  }
  rows.push_back(c);
  return stack(rows, 0);
}

Tensor op(const In& x) { return ln_lstm_recurrence(x[0], x[1], x[2], x[3], x[4], x[5], x[6], kEps); }

// The inputs xp, w_hh, gamma_hh, gamma_c, beta_c, h0, c0 (gains near 1, all requiring grad).
In inputs(int64_t T, int64_t B, int64_t H, DType dt, unsigned seed) {
  const auto leaf = [dt](const Tensor& t) { return t.detach().to(dt).requires_grad_(); };
  return {leaf(random_input({T, B, 4 * H}, seed, -2, 2)), leaf(random_input({4 * H, H}, seed + 1) * 0.5),
          leaf(random_input({4 * H}, seed + 2, 0.5, 1.5)), leaf(random_input({H}, seed + 3, 0.5, 1.5)),
          leaf(random_input({H}, seed + 4, -0.5, 0.5)),    leaf(random_input({B, H}, seed + 5)),
          leaf(random_input({B, H}, seed + 6))};
}

// The same inputs without h0 and c0 (undefined: zeros).
In without_state(In x) {
  x[5] = Tensor(), x[6] = Tensor();
  return x;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ln_lstm_recurrence_op)

BOOST_AUTO_TEST_CASE(matches_the_step_by_step_composition) {
  for (DType dt : {DType::Float32, DType::Float64})
    for (int64_t B : {3, 20, 40})
      for (int64_t T : {1, 5})
        for (bool state : {true, false}) {
          const In all = inputs(T, B, 6, dt, 10), x = state ? all : without_state(all);
          const Tensor gout = random_input({T + 1, B, 6}, 20).to(dt).detach();
          const auto got = output_and_grads(op, x, gout), want = output_and_grads(composed, x, gout);
          const double tol = dt == DType::Float32 ? 5e-5 : 1e-11;
          BOOST_TEST_CONTEXT(dtype_name(dt) << " B " << B << " T " << T << (state ? " h0, c0" : " no state")) {
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
      int64_t T, B, H;
      bool state;
    };
    for (const Case c : {Case{4, 5, 9, true}, Case{4, 16, 9, false}, Case{4, 32, 9, true}, Case{3, 50, 9, false},
                         Case{3, 64, 9, true}, Case{2, 65, 200, true}}) {
      const In all = inputs(c.T, c.B, c.H, DType::Float32, 30), x = c.state ? all : without_state(all);
      const Tensor gout = random_input({c.T + 1, c.B, c.H}, 40).to(DType::Float32).detach();
      expect_same_bits_on_1_2_and_3_threads([&] { return output_and_grads(op, x, gout); },
                                            "B " + std::to_string(c.B) + " H " + std::to_string(c.H));
    }
  });
}

BOOST_AUTO_TEST_CASE(gradcheck_and_gradgradcheck_on_every_target) {
  for_each_target([] {
    const In all = inputs(3, 2, 3, DType::Float64, 50);
    expect_gradcheck("all inputs", op, all);
    const In none = without_state(all);
    expect_gradcheck("no state", over_defined(op, none), defined_of(none));
    In one = none;
    one[0] = narrow(all[0], 0, 0, 1).detach().requires_grad_();
    expect_gradcheck("one step, no state", over_defined(op, one), defined_of(one));
    // 16 rows: W_hh packed once per pass (one part, the blocked GEMM).
    expect_gradcheck("16 rows, packed W_hh", op, inputs(2, 16, 3, DType::Float64, 60));
    expect_gradgradcheck("all inputs", op, all);
    expect_gradgradcheck("no state", over_defined(op, none), defined_of(none));
    In h0_only = all;
    h0_only[6] = Tensor();
    expect_gradgradcheck("h0 only", over_defined(op, h0_only), defined_of(h0_only));
  });
}

BOOST_AUTO_TEST_CASE(bad_input) {
  const auto call = [](const Shape& xp, const Shape& w, const Shape& gh, const Shape& gc, const Shape& h0,
                       DType c0_dtype = DType::Float32, double eps = kEps) {
    ln_lstm_recurrence(zeros(xp), zeros(w), zeros(gh), zeros(gc), zeros(gc), h0.empty() ? Tensor() : zeros(h0),
                       zeros({xp[1], xp[2] / 4}, c0_dtype), eps);
  };
  expect_error([&] { call({3, 2, 10}, {8, 2}, {8}, {2}, {}); }, {"ln_lstm_recurrence", "(T, B, 4H)", "[3, 2, 10]"});
  expect_error([&] { call({0, 2, 8}, {8, 2}, {8}, {2}, {}); }, {"ln_lstm_recurrence", "T >= 1", "[0, 2, 8]"});
  expect_error([&] { call({3, 2, 8}, {8, 3}, {8}, {2}, {}); }, {"ln_lstm_recurrence", "w_hh", "[8, 2]", "[8, 3]"});
  expect_error([&] { call({3, 2, 8}, {8, 2}, {2}, {2}, {}); }, {"ln_lstm_recurrence", "gamma_hh", "[8]", "[2]"});
  expect_error([&] { call({3, 2, 8}, {8, 2}, {8}, {8}, {}); }, {"ln_lstm_recurrence", "gamma_c", "[2]", "[8]"});
  expect_error([&] { call({3, 2, 8}, {8, 2}, {8}, {2}, {3, 2}); }, {"ln_lstm_recurrence", "h0", "[2, 2]", "[3, 2]"});
  expect_error([&] { call({3, 2, 8}, {8, 2}, {8}, {2}, {}, DType::Float64); },
               {"ln_lstm_recurrence", "c0", "float32", "float64"});
  expect_error([&] { call({3, 2, 8}, {8, 2}, {8}, {2}, {}, DType::Float32, -1); },
               {"ln_lstm_recurrence", "eps", "-1"});
  expect_error([] { ln_lstm_recurrence(zeros({3, 2, 8}), zeros({8, 2}), Tensor(), zeros({2}), zeros({2}), Tensor(),
                                       Tensor(), kEps); },
               {"ln_lstm_recurrence", "gamma_hh", "defined"});
}

BOOST_AUTO_TEST_SUITE_END()
