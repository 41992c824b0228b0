// The LSTM cell kernels on every Highway target against their scalar reference: H around every
// vector width, float and double, the fused cell and its two halves, missing gradients, and NaN,
// infinite and large pre-activations.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/kernels/lstm.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"

namespace k = normlab::autograd::kernels;
using normlab::test::check_close;
using normlab::test::for_each_target;
using normlab::test::random_vec;
using normlab::test::tail_lengths;

namespace {

// The kernels compute in T with Highway's Exp (1 ulp) and Tanh (4 ulp), the reference in double.
// Values are O(1); the worst case is 1 - tanh(c)^2 for |c| of a few units, where the few ulp of
// tanh become an absolute error of ~1e-6 (float) / ~1e-15 (double) of a term below 1.
template <typename T> double rtol() { return sizeof(T) == 4 ? 2e-6 : 1e-13; }
template <typename T> double atol() { return sizeof(T) == 4 ? 2e-6 : 1e-14; }

template <typename T>
struct Case {
  int64_t B, H;
  std::vector<T> G, c_prev, dh, dc;
  Case(int64_t b, int64_t h, unsigned seed)
      : B(b), H(h), G(random_vec<T>(b * 4 * h, -4, 4, seed)), c_prev(random_vec<T>(b * h, -2, 2, seed + 1)),
        dh(random_vec<T>(b * h, seed + 2)), dc(random_vec<T>(b * h, seed + 3)) {}
};

// Forward: the fused cell and the gates + output halves against the reference; the halves give the
// fused cell's values bit for bit (the same operations). Nothing written past the ends.
template <typename T>
void check_forward(const Case<T>& cs) {
  const int64_t B = cs.B, H = cs.H, n = B * H;
  const T sentinel = T(-7);
  std::vector<T> acts(4 * n + 1, sentinel), c(n + 1, sentinel), h(n + 1, sentinel);
  std::vector<T> want_acts(4 * n), want_c(n), want_h(n);
  k::lstm_cell_forward(B, H, cs.G.data(), cs.c_prev.data(), acts.data(), c.data(), h.data());
  k::ref::lstm_cell_forward(B, H, cs.G.data(), cs.c_prev.data(), want_acts.data(), want_c.data(), want_h.data());
  check_close(acts, want_acts, 4 * n, rtol<T>(), atol<T>());
  check_close(c, want_c, n, rtol<T>(), atol<T>());
  check_close(h, want_h, n, rtol<T>(), atol<T>());
  BOOST_TEST((acts[4 * n] == sentinel && c[n] == sentinel && h[n] == sentinel));

  std::vector<T> acts2(4 * n + 1, sentinel), c2(n + 1, sentinel), h2(n + 1, sentinel), o(n);
  k::lstm_gates_forward(B, H, cs.G.data(), cs.c_prev.data(), acts2.data(), c2.data());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) o[b * H + j] = acts2[b * 4 * H + 3 * H + j];
  k::lstm_output_forward(n, o.data(), c2.data(), h2.data());
  BOOST_TEST((acts2 == acts));
  BOOST_TEST((c2 == c));
  BOOST_TEST((h2 == h));
}

// Backward: fused with each combination of missing dh / dc / dc_prev, and the halves (output, then
// gates from dc + dy), against the reference at the reference's saved activations.
template <typename T>
void check_backward(const Case<T>& cs) {
  const int64_t B = cs.B, H = cs.H, n = B * H;
  const T sentinel = T(-7);
  std::vector<T> acts(4 * n), c(n), h(n);
  k::ref::lstm_cell_forward(B, H, cs.G.data(), cs.c_prev.data(), acts.data(), c.data(), h.data());
  for (int mask = 0; mask < 8; ++mask) {
    const bool has_dh = mask & 1, has_dc = mask & 2, has_dcp = mask & 4;
    BOOST_TEST_CONTEXT("dh " << has_dh << " dc " << has_dc << " dc_prev " << has_dcp) {
      const T* dh = has_dh ? cs.dh.data() : nullptr;
      const T* dc = has_dc ? cs.dc.data() : nullptr;
      std::vector<T> dG(4 * n + 1, sentinel), dcp(n + 1, sentinel), want_dG(4 * n), want_dcp(n);
      k::lstm_cell_backward(B, H, dh, dc, acts.data(), cs.c_prev.data(), c.data(), dG.data(),
                            has_dcp ? dcp.data() : nullptr);
      k::ref::lstm_cell_backward(B, H, dh, dc, acts.data(), cs.c_prev.data(), c.data(), want_dG.data(),
                                 want_dcp.data());
      check_close(dG, want_dG, 4 * n, rtol<T>(), atol<T>());
      BOOST_TEST(dG[4 * n] == sentinel);
      if (has_dcp) check_close(dcp, want_dcp, n, rtol<T>(), atol<T>());
      else BOOST_TEST(dcp[0] == sentinel);
      BOOST_TEST(dcp[n] == sentinel);
    }
  }
  // Halves: do and dy from the output (y = c), then the update's backward from do and dc + dy.
  std::vector<T> o(n);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) o[b * H + j] = acts[b * 4 * H + 3 * H + j];
  std::vector<T> d_o(n + 1, sentinel), dy(n + 1, sentinel), want_do(n), want_dy(n);
  k::lstm_output_backward(n, cs.dh.data(), o.data(), c.data(), d_o.data(), dy.data());
  k::ref::lstm_output_backward(n, cs.dh.data(), o.data(), c.data(), want_do.data(), want_dy.data());
  check_close(d_o, want_do, n, rtol<T>(), atol<T>());
  check_close(dy, want_dy, n, rtol<T>(), atol<T>());
  BOOST_TEST((d_o[n] == sentinel && dy[n] == sentinel));
  std::vector<T> dct(n);
  for (int64_t i = 0; i < n; ++i) dct[i] = cs.dc[i] + want_dy[i];
  for (int mask = 0; mask < 4; ++mask) {
    const bool has_do = mask & 1, has_dc = mask & 2;
    BOOST_TEST_CONTEXT("gates backward, do " << has_do << " dc " << has_dc) {
      const T* pdo = has_do ? want_do.data() : nullptr;
      const T* pdc = has_dc ? dct.data() : nullptr;
      std::vector<T> dG(4 * n + 1, sentinel), dcp(n + 1, sentinel), want_dG(4 * n), want_dcp(n);
      k::lstm_gates_backward(B, H, pdo, pdc, acts.data(), cs.c_prev.data(), dG.data(), dcp.data());
      k::ref::lstm_gates_backward(B, H, pdo, pdc, acts.data(), cs.c_prev.data(), want_dG.data(), want_dcp.data());
      check_close(dG, want_dG, 4 * n, rtol<T>(), atol<T>());
      check_close(dcp, want_dcp, n, rtol<T>(), atol<T>());
      BOOST_TEST((dG[4 * n] == sentinel && dcp[n] == sentinel));
      if (has_do && has_dc) {
        // The two halves chained give the fused cell's gradients.
        std::vector<T> fused(4 * n), fused_dcp(n);
        k::ref::lstm_cell_backward(B, H, cs.dh.data(), cs.dc.data(), acts.data(), cs.c_prev.data(), c.data(),
                                   fused.data(), fused_dcp.data());
        check_close(dG, fused, 4 * n, rtol<T>(), atol<T>());
        check_close(dcp, fused_dcp, n, rtol<T>(), atol<T>());
      }
    }
  }
}

template <typename T>
void test_against_reference() {
  for_each_target([&] {
    for (int64_t H : tail_lengths())
      for (int64_t B : {1, 3}) {
        if (B * H > 5000) continue;
        BOOST_TEST_CONTEXT("B " << B << " H " << H) {
          const Case<T> cs(B, H, 11 + static_cast<unsigned>(B * H));
          check_forward(cs);
          check_backward(cs);
        }
      }
  });
}

// Special pre-activations in rows of H = 37 (a full vector or the tail on every target): NaN gives
// NaN in its gate, c and h of that unit only; +-inf and +-1000 saturate the gates to exactly 0 or 1
// (tanh to -1 or 1), with no NaN from overflow.
template <typename T>
void test_special_values() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const int64_t B = 2, H = 37;
  for_each_target([&] {
    for (int64_t gate = 0; gate < 4; ++gate)
      for (int64_t pos : {0, 20, 36}) {
        BOOST_TEST_CONTEXT("gate " << gate << " unit " << pos) {
          Case<T> cs(B, H, 5);
          const int64_t at = 4 * H + gate * H + pos;  // row 1
          std::vector<T> acts(4 * B * H), c(B * H), h(B * H);
          cs.G[at] = nan;
          k::lstm_cell_forward(B, H, cs.G.data(), cs.c_prev.data(), acts.data(), c.data(), h.data());
          BOOST_TEST(std::isnan(acts[at]));
          BOOST_TEST(std::isnan(h[H + pos]));
          if (gate != 3) BOOST_TEST(std::isnan(c[H + pos]));
          int64_t nans = 0;
          for (T v : h) nans += std::isnan(v);
          BOOST_TEST(nans == 1);
          for (T v : {inf, T(1000), -inf, T(-1000)}) {
            cs.G[at] = v;
            k::lstm_cell_forward(B, H, cs.G.data(), cs.c_prev.data(), acts.data(), c.data(), h.data());
            const T want = gate == 2 ? (v > 0 ? T(1) : T(-1)) : (v > 0 ? T(1) : T(0));
            BOOST_TEST(acts[at] == want);
            for (T x : h) BOOST_TEST(std::isfinite(x));
          }
        }
      }
  });
}

// Hand-worked: G = 0 everywhere gives i = f = o = 1/2, g = 0, so c = c_prev / 2 and
// h = tanh(c_prev / 2) / 2; with c_prev = 2: c = 1, h = tanh(1) / 2.
template <typename T>
void test_hand_worked() {
  for_each_target([&] {
    const std::vector<T> G(4 * 5, T(0)), c_prev(5, T(2));
    std::vector<T> acts(20), c(5), h(5);
    k::lstm_cell_forward(1, 5, G.data(), c_prev.data(), acts.data(), c.data(), h.data());
    const double tol = sizeof(T) == 4 ? 1e-6 : 1e-14;
    for (int j = 0; j < 5; ++j) {
      BOOST_TEST(acts[j] == 0.5, boost::test_tools::tolerance(T(tol)));
      BOOST_TEST(acts[10 + j] == 0);
      BOOST_TEST(c[j] == 1, boost::test_tools::tolerance(T(tol)));
      BOOST_TEST(h[j] == std::tanh(1.0) / 2, boost::test_tools::tolerance(tol));
    }
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lstm_kernels)

BOOST_AUTO_TEST_CASE(float_against_reference) { test_against_reference<float>(); }
BOOST_AUTO_TEST_CASE(double_against_reference) { test_against_reference<double>(); }
BOOST_AUTO_TEST_CASE(float_special_values) { test_special_values<float>(); }
BOOST_AUTO_TEST_CASE(double_special_values) { test_special_values<double>(); }
BOOST_AUTO_TEST_CASE(float_hand_worked) { test_hand_worked<float>(); }
BOOST_AUTO_TEST_CASE(double_hand_worked) { test_hand_worked<double>(); }

BOOST_AUTO_TEST_SUITE_END()
