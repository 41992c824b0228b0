// The lstm_recurrence op: its outputs and gradients against the step-by-step composition
// (xp_t + linear(h, w_hh), then lstm_cell), the same bits on 1, 2 and 3 threads on every Highway
// target (batches below and above the row split), float64 gradchecks and gradgradchecks with and
// without h0 and c0, and its shape errors.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/parallel.h"
#include "tests/support/compare.h"
#include "tests/support/targets.h"
#include "tests/support/tensors.h"
#include "tests/support/threads.h"

using namespace normlab::autograd;
using normlab::test::expect_error;
using normlab::test::expect_same_bits_on_1_2_and_3_threads;
using normlab::test::for_each_target;
using normlab::test::expect_gradcheck;
using normlab::test::expect_gradgradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// The composition the op replaces: returns (T + 1, B, H) as the op.
Tensor composed(const Tensor& xp, const Tensor& w, const Tensor& h0, const Tensor& c0) {
  const int64_t T = xp.size(0), B = xp.size(1), H = w.size(1);
  Tensor h = h0.defined() ? h0 : T == 1 ? zeros({B, H}, xp.dtype()) : Tensor();
  Tensor c = c0.defined() ? c0 : zeros({B, H}, xp.dtype());
  std::vector<Tensor> rows;
  for (int64_t t = 0; t < T; ++t) {
    const Tensor G = h.defined() ? select(xp, 0, t) + linear(h, w) : select(xp, 0, t);
    const Tensor s = lstm_cell(G, c);
    h = select(s, 0, 0), c = select(s, 0, 1);
    rows.push_back(h);
  }
  rows.push_back(c);
  return stack(rows, 0);
}

// Outputs and gradients of f(xp, w, h0, c0) (h0, c0 given) for the cotangent gout.
std::vector<std::vector<double>> run(Tensor (*f)(const Tensor&, const Tensor&, const Tensor&, const Tensor&),
                                     const In& in, const Tensor& gout) {
  const Tensor out = f(in[0], in[1], in[2], in[3]);
  const std::vector<Tensor> g = grad({out}, in, {gout});
  std::vector<std::vector<double>> r{out.to_vector()};
  for (const Tensor& t : g) r.push_back(t.to_vector());
  return r;
}

In inputs(int64_t T, int64_t B, int64_t H, DType dt, unsigned seed) {
  return {(random_input({T, B, 4 * H}, seed, -2, 2)).detach().to(dt).requires_grad_(),
          (random_input({4 * H, H}, seed + 1) * 0.5).detach().to(dt).requires_grad_(),
          random_input({B, H}, seed + 2).detach().to(dt).requires_grad_(),
          random_input({B, H}, seed + 3).detach().to(dt).requires_grad_()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lstm_recurrence_op)

BOOST_AUTO_TEST_CASE(matches_the_step_by_step_composition) {
  for (DType dt : {DType::Float32, DType::Float64})
    for (int64_t B : {3, 20, 40})
      for (int64_t T : {1, 5}) {
        const In in = inputs(T, B, 6, dt, 10);
        const Tensor gout = random_input({T + 1, B, 6}, 20).to(dt).detach();
        const auto got = run(lstm_recurrence, in, gout), want = run(composed, in, gout);
        const double tol = dt == DType::Float32 ? 2e-5 : 1e-12;
        BOOST_TEST_CONTEXT(dtype_name(dt) << " B " << B << " T " << T) {
          for (size_t i = 0; i < got.size(); ++i)
            normlab::test::expect_elements_close("output/gradient " + std::to_string(i), got[i], want[i], tol, tol);
        }
        // Without h0 and c0: zeros (W_hh's gradient zeros, not undefined, for T = 1).
        const Tensor out = lstm_recurrence(in[0], in[1], Tensor(), Tensor());
        const Tensor want0 = composed(in[0], in[1], Tensor(), Tensor());
        normlab::test::expect_elements_close("no state", out.to_vector(), want0.to_vector(), tol, tol);
        const std::vector<Tensor> g = grad({out}, {in[0], in[1]}, {gout});
        const std::vector<Tensor> g0 = grad({want0}, {in[0], in[1]}, {gout});
        normlab::test::expect_elements_close("no state dW", g[1].to_vector(), g0[1].to_vector(), tol, tol);
      }
}

BOOST_AUTO_TEST_CASE(same_bits_on_1_2_and_3_threads_on_every_target) {
  const normlab::test::ThreadsGuard guard;  // every grain 0: split wherever the rows allow
  for_each_target([] {
    // H = 768 on 65 rows: one part takes the blocked GEMM, parts of 32 rows would take the dot
    // products on AVX-512 without the blocked flag.
    struct Case { int64_t T, B, H; };
    for (const Case c : {Case{4, 5, 9}, Case{4, 16, 9}, Case{4, 31, 9}, Case{4, 32, 9}, Case{4, 50, 9}, Case{4, 64, 9}, Case{2, 65, 768}}) {
      const int64_t B = c.B;
      const In in = inputs(c.T, B, c.H, DType::Float32, 30);
      const Tensor gout = random_input({c.T + 1, B, c.H}, 40).to(DType::Float32).detach();
      expect_same_bits_on_1_2_and_3_threads([&] { return run(lstm_recurrence, in, gout); },
                                            "B " + std::to_string(B) + " H " + std::to_string(c.H));
    }
  });
}

BOOST_AUTO_TEST_CASE(gradcheck_and_gradgradcheck_on_every_target) {
  for_each_target([] {
    const In in = inputs(3, 2, 3, DType::Float64, 50);
    const auto f = [](const In& x) { return lstm_recurrence(x[0], x[1], x[2], x[3]); };
    expect_gradcheck("all inputs", f, in);
    expect_gradcheck("no state", [](const In& x) { return lstm_recurrence(x[0], x[1], Tensor(), Tensor()); },
                     {in[0], in[1]});
    expect_gradcheck("one step, no state", [](const In& x) { return lstm_recurrence(x[0], x[1], Tensor(), Tensor()); },
                     {narrow(in[0], 0, 0, 1).detach().requires_grad_(), in[1]});
    // 16 rows: W_hh packed once per pass (one part, the blocked GEMM).
    const In packed = inputs(2, 16, 3, DType::Float64, 60);
    expect_gradcheck("16 rows, packed W_hh", f, packed);
    expect_gradgradcheck("all inputs", f, in);
    expect_gradgradcheck("no state", [](const In& x) { return lstm_recurrence(x[0], x[1], Tensor(), Tensor()); },
                         {in[0], in[1]});
    expect_gradgradcheck("h0 only", [](const In& x) { return lstm_recurrence(x[0], x[1], x[2], Tensor()); },
                         {in[0], in[1], in[2]});
  });
}

BOOST_AUTO_TEST_CASE(bad_input) {
  expect_error([] { lstm_recurrence(zeros({3, 2, 10}), zeros({8, 2}), Tensor(), Tensor()); },
               {"lstm_recurrence", "(T, B, 4H)", "[3, 2, 10]"});
  expect_error([] { lstm_recurrence(zeros({0, 2, 8}), zeros({8, 2}), Tensor(), Tensor()); },
               {"lstm_recurrence", "T >= 1", "[0, 2, 8]"});
  expect_error([] { lstm_recurrence(zeros({3, 2, 8}), zeros({8, 3}), Tensor(), Tensor()); },
               {"lstm_recurrence", "w_hh", "[8, 2]", "[8, 3]"});
  expect_error([] { lstm_recurrence(zeros({3, 2, 8}), zeros({8, 2}), zeros({3, 2}), Tensor()); },
               {"lstm_recurrence", "h0", "[2, 2]", "[3, 2]"});
  expect_error([] { lstm_recurrence(zeros({3, 2, 8}), zeros({8, 2}), Tensor(), zeros({2, 2}, DType::Float64)); },
               {"lstm_recurrence", "c0", "float32", "float64"});
  expect_error([] { lstm_recurrence(zeros({3, 2, 8}), zeros({8, 2}, DType::Float64), Tensor(), Tensor()); },
               {"lstm_recurrence", "w_hh", "float32", "float64"});
}

BOOST_AUTO_TEST_SUITE_END()
