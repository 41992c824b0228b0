// The GEMM kernel on every Highway target against its scalar reference (ref::gemm): shapes that
// hit the register-tile, cache-block and tiny-matrix edges, all four transposes, batches with
// strides (broadcast, summed into one C), the accumulate flag, K = 0, float and double.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"

namespace k = normlab::autograd::kernels;
using normlab::test::for_each_target;

using normlab::test::random_vec;

namespace {

// Runs kernels::gemm and ref::gemm on the same random inputs and C, and compares all of C plus a
// guard element past its end. Inputs are in [-1, 1], so |sum of K products| <= K and the rounding
// error of any summation order is below a few K ulp: atol = 4 K eps (a wrong product is off by
// O(1)). The reference computes in T too, so both sides round.
template <typename T>
void check_gemm(const k::GemmShape& s, unsigned seed) {
  BOOST_TEST_CONTEXT("M=" << s.m << " N=" << s.n << " K=" << s.k << " trans_a=" << s.trans_a << " trans_b="
                          << s.trans_b << " batch=" << s.batch << " strides=" << s.stride_a << "," << s.stride_b
                          << "," << s.stride_c << " accumulate=" << s.accumulate) {
    const int64_t last = s.batch - 1;
    const auto a = random_vec<T>(last * s.stride_a + s.m * s.k, seed);
    const auto b = random_vec<T>(last * s.stride_b + s.k * s.n, seed + 1);
    const int64_t nc = last * s.stride_c + s.m * s.n;
    auto want = random_vec<T>(nc + 1, seed + 2);  // C starts non-zero: accumulate must use it, else ignore it
    auto got = want;
    k::gemm(s, a.data(), b.data(), got.data());
    k::ref::gemm(s, a.data(), b.data(), want.data());
    const double eps = std::numeric_limits<T>::epsilon();
    const double terms = static_cast<double>(s.k) * (s.stride_c == 0 ? s.batch : 1) + 1;
    normlab::test::check_close(got, want, static_cast<size_t>(nc), 0, 4 * terms * eps);
    BOOST_TEST(got[nc] == want[nc]);  // nothing written past the end
  }
}

struct Mnk { int64_t m, n, k; };

// Combinations of {1, 3, 7, 17, 33, 65, 130, 300}: tile edges (MR = 6, NR = 2..32 lanes), more
// than one K block (256) and M block (72 or 144); operands read in place (small M, K < 1024)
// and packed (large M, K >= 1024: the last two shapes); the dot-product (B^T, M <= 8 or N <= 4)
// and narrow (A^T, N <= 4) kernels; C^T = B A^T written transposed (B^T, 9 <= M <= 32, M < N).
const std::vector<Mnk> kShapes = {
    {1, 1, 1},     {3, 7, 17},    {7, 3, 1},      {17, 33, 7},    {33, 17, 65},  {1, 300, 65},
    {300, 1, 17},  {7, 130, 300}, {65, 130, 33},  {130, 65, 300}, {300, 33, 130}, {33, 300, 3},
    {130, 130, 130}, {65, 17, 300}, {17, 65, 130}, {13, 35, 1030}, {150, 20, 1100},
};

template <typename T>
void test_shapes() {
  for_each_target([] {
    unsigned seed = 1;
    for (const Mnk& x : kShapes)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          k::GemmShape s;
          s.m = x.m, s.n = x.n, s.k = x.k, s.trans_a = ta, s.trans_b = tb;
          check_gemm<T>(s, seed += 3);
        }
  });
}

template <typename T>
void test_batches() {
  for_each_target([] {
    unsigned seed = 100;
    for (const Mnk& x : std::vector<Mnk>{{7, 17, 33}, {65, 33, 130}, {3, 300, 7}, {33, 3, 65}, {17, 40, 65}})
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (int mode = 0; mode < 5; ++mode) {
            k::GemmShape s;
            s.m = x.m, s.n = x.n, s.k = x.k, s.trans_a = ta, s.trans_b = tb, s.batch = 3;
            s.stride_a = x.m * x.k + 5, s.stride_b = x.k * x.n + 2, s.stride_c = x.m * x.n + 1;
            if (mode == 1) s.stride_a = 0;                       // A broadcast to the batch
            if (mode == 2) s.stride_b = 0;                       // B broadcast
            if (mode == 3) s.stride_c = 0;                       // the batch sums into one C
            if (mode == 4) s.stride_c = 0, s.accumulate = true;  // ... onto C's old value
            check_gemm<T>(s, seed += 3);
            s.accumulate = true;
            check_gemm<T>(s, seed += 3);
          }
  });
}

// K = 0: C = 0, or untouched with accumulate; M = 0 or N = 0 writes nothing.
template <typename T>
void test_empty() {
  for_each_target([] {
    for (bool acc : {false, true})
      for (int64_t batch : {1, 2}) {
        k::GemmShape s;
        s.m = 3, s.n = 5, s.k = 0, s.accumulate = acc, s.batch = batch, s.stride_c = 15;
        std::vector<T> c(31, T(7));
        k::gemm(s, static_cast<const T*>(nullptr), static_cast<const T*>(nullptr), c.data());
        for (int64_t i = 0; i < 30; ++i) BOOST_TEST(c[i] == (acc || i >= 15 * batch ? T(7) : T(0)));
        BOOST_TEST(c[30] == T(7));
      }
    k::GemmShape s;
    s.m = 0, s.n = 4, s.k = 3;
    T c = 7;
    const std::vector<T> a(12, 1);
    k::gemm(s, a.data(), a.data(), &c);
    s.m = 4, s.n = 0;
    k::gemm(s, a.data(), a.data(), &c);
    BOOST_TEST(c == T(7));
  });
}

// One wide output (N > NC = 4080) crosses a B-panel boundary.
template <typename T>
void test_wide() {
  k::GemmShape s;
  s.m = 13, s.n = 4100, s.k = 5;
  check_gemm<T>(s, 7);
  s.trans_a = s.trans_b = true;
  check_gemm<T>(s, 8);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gemm)

BOOST_AUTO_TEST_CASE(shapes_and_transposes_f32) { test_shapes<float>(); }
BOOST_AUTO_TEST_CASE(shapes_and_transposes_f64) { test_shapes<double>(); }
BOOST_AUTO_TEST_CASE(batches_strides_accumulate_f32) { test_batches<float>(); }
BOOST_AUTO_TEST_CASE(batches_strides_accumulate_f64) { test_batches<double>(); }
BOOST_AUTO_TEST_CASE(empty_k_m_n_f32) { test_empty<float>(); }
BOOST_AUTO_TEST_CASE(empty_k_m_n_f64) { test_empty<double>(); }
BOOST_AUTO_TEST_CASE(wider_than_one_panel_f32) { test_wide<float>(); }
BOOST_AUTO_TEST_CASE(wider_than_one_panel_f64) { test_wide<double>(); }

BOOST_AUTO_TEST_SUITE_END()
