// Every normalization kernel, on every Highway target, float and double, against its scalar
// reference (double accumulation), with row/channel lengths from tail_lengths().
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "nn/kernels/norm.h"
#include "tests/support/compare.h"
#include "tests/support/targets.h"

namespace k = normlab::nn::kernels;
using normlab::test::check_close;
using normlab::test::tail_lengths;

namespace {

template <typename T>
std::vector<T> random_vec(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(gen));
  return v;
}

// Float kernels accumulate in float (the reference in double): a few ulp per element plus the
// rounding of sums of up to a few thousand terms.
template <typename T> double tol() { return sizeof(T) == 4 ? 3e-5 : 1e-12; }

// Runs f on every target, also checking that the norm kernels' own dispatch switched.
template <typename F>
void for_each_target(F&& f) {
  normlab::test::for_each_target([&] {
    BOOST_REQUIRE_EQUAL(std::string(k::norm_active_target()), std::string(normlab::autograd::kernels::active_target()));
    f();
  });
}

// Optional pointer: the data when on, else null.
template <typename T> const T* opt(bool on, const std::vector<T>& v) { return on ? v.data() : nullptr; }
template <typename T> T* opt(bool on, std::vector<T>& v) { return on ? v.data() : nullptr; }

// Row inputs: values in [-2, 2], the last row shifted by 300 (a large mean).
template <typename T>
std::vector<T> row_inputs(int64_t rows, int64_t n, unsigned seed) {
  auto x = random_vec<T>(rows * n, -2, 2, seed);
  for (int64_t j = 0; j < n; ++j) x[(rows - 1) * n + j] += T(300);
  return x;
}

template <typename T>
void test_layer_norm_forward() {
  const int64_t rows = 3;
  for_each_target([&] {
    for (int64_t n : tail_lengths())
      for (int affine = 0; affine < 4; ++affine) {
        const bool hg = affine & 1, hb = affine & 2;
        BOOST_TEST_CONTEXT("n=" << n << " gamma=" << hg << " beta=" << hb) {
          const auto x = row_inputs<T>(rows, n, 1 + n);
          const auto gamma = random_vec<T>(n, 0.5, 1.5, 2), beta = random_vec<T>(n, -1, 1, 3);
          std::vector<T> y(rows * n + 1, T(-7)), mean(rows), rstd(rows), wy(rows * n), wm(rows), wr(rows);
          k::layer_norm_forward(rows, n, x.data(), opt(hg, gamma), opt(hb, beta), 1e-5, y.data(), mean.data(),
                                rstd.data());
          k::ref::layer_norm_forward(rows, n, x.data(), opt(hg, gamma), opt(hb, beta), 1e-5, wy.data(), wm.data(),
                                     wr.data());
          check_close(y, wy, rows * n, tol<T>(), tol<T>());
          check_close(mean, wm, rows, tol<T>(), tol<T>());
          check_close(rstd, wr, rows, tol<T>(), tol<T>());
          BOOST_TEST(y[rows * n] == T(-7));  // nothing written past the end
        }
      }
  });
}

template <typename T>
void test_layer_norm_backward() {
  const int64_t rows = 3;
  for_each_target([&] {
    for (int64_t n : tail_lengths())
      for (int mode = 0; mode < 8; ++mode) {
        const bool hg = mode & 1, want_params = mode & 2, want_dx = !(mode & 4) || !want_params;
        BOOST_TEST_CONTEXT("n=" << n << " gamma=" << hg << " dparams=" << want_params << " dx=" << want_dx) {
          const auto x = row_inputs<T>(rows, n, 5 + n);
          const auto dy = random_vec<T>(rows * n, -1, 1, 6 + n), gamma = random_vec<T>(n, 0.5, 1.5, 7);
          std::vector<T> y(rows * n), mean(rows), rstd(rows);
          k::ref::layer_norm_forward(rows, n, x.data(), opt(hg, gamma), (const T*)nullptr, 1e-5, y.data(),
                                     mean.data(), rstd.data());
          std::vector<T> dx(rows * n + 1, T(-7)), dg(n, T(9)), db(n, T(9)), wdx(rows * n), wdg(n), wdb(n);
          k::layer_norm_backward(rows, n, dy.data(), x.data(), mean.data(), rstd.data(), opt(hg, gamma),
                                 opt(want_dx, dx), opt(want_params, dg), opt(want_params, db));
          k::ref::layer_norm_backward(rows, n, dy.data(), x.data(), mean.data(), rstd.data(), opt(hg, gamma),
                                      wdx.data(), wdg.data(), wdb.data());
          if (want_dx) check_close(dx, wdx, rows * n, tol<T>(), tol<T>());
          else BOOST_TEST(dx[0] == T(-7));
          if (want_params) {
            check_close(dg, wdg, n, tol<T>(), tol<T>());
            check_close(db, wdb, n, tol<T>(), tol<T>());
          }
          BOOST_TEST(dx[rows * n] == T(-7));
        }
      }
  });
}

template <typename T>
void test_rms_norm() {
  const int64_t rows = 3;
  for_each_target([&] {
    for (int64_t n : tail_lengths())
      for (int mode = 0; mode < 4; ++mode) {
        const bool hg = mode & 1, want_dg = mode & 2;
        BOOST_TEST_CONTEXT("n=" << n << " gamma=" << hg << " dgamma=" << want_dg) {
          const auto x = row_inputs<T>(rows, n, 9 + n);
          const auto dy = random_vec<T>(rows * n, -1, 1, 10 + n), gamma = random_vec<T>(n, 0.5, 1.5, 11);
          std::vector<T> y(rows * n + 1, T(-7)), rstd(rows), wy(rows * n), wr(rows);
          k::rms_norm_forward(rows, n, x.data(), opt(hg, gamma), 1e-6, y.data(), rstd.data());
          k::ref::rms_norm_forward(rows, n, x.data(), opt(hg, gamma), 1e-6, wy.data(), wr.data());
          check_close(y, wy, rows * n, tol<T>(), tol<T>());
          check_close(rstd, wr, rows, tol<T>(), tol<T>());
          BOOST_TEST(y[rows * n] == T(-7));
          std::vector<T> dx(rows * n), dg(n), wdx(rows * n), wdg(n);
          k::rms_norm_backward(rows, n, dy.data(), x.data(), wr.data(), opt(hg, gamma), dx.data(), opt(want_dg, dg));
          k::ref::rms_norm_backward(rows, n, dy.data(), x.data(), wr.data(), opt(hg, gamma), wdx.data(), wdg.data());
          check_close(dx, wdx, rows * n, tol<T>(), tol<T>());
          if (want_dg) check_close(dg, wdg, n, tol<T>(), tol<T>());
        }
      }
  });
}

template <typename T>
void test_group_norm() {
  struct Case { int64_t N, C, S, G; };
  std::vector<Case> cases;
  for (int64_t s : tail_lengths()) cases.push_back({2, 4, s, 2});  // S from the tail lengths
  for (int64_t c : {1, 3, 7, 16, 33}) cases.push_back({2, c, 3, c});  // one channel per group
  cases.push_back({3, 6, 5, 1});                                     // one group: LayerNorm on (C, S)
  for_each_target([&] {
    for (const Case& cs : cases)
      for (int mode = 0; mode < 4; ++mode) {
        const bool affine = mode & 1, want_params = mode & 2;
        BOOST_TEST_CONTEXT("N=" << cs.N << " C=" << cs.C << " S=" << cs.S << " G=" << cs.G << " affine=" << affine) {
          const int64_t total = cs.N * cs.C * cs.S, rows = cs.N * cs.G;
          auto x = random_vec<T>(total, -2, 2, 13 + cs.S);
          for (int64_t i = 0; i < cs.C * cs.S; ++i) x[i] += T(50);  // sample 0 has a large mean
          const auto dy = random_vec<T>(total, -1, 1, 14 + cs.S);
          const auto gamma = random_vec<T>(cs.C, 0.5, 1.5, 15), beta = random_vec<T>(cs.C, -1, 1, 16);
          std::vector<T> y(total), mean(rows), rstd(rows), wy(total), wm(rows), wr(rows);
          k::group_norm_forward(cs.N, cs.C, cs.S, cs.G, x.data(), opt(affine, gamma), opt(affine, beta), 1e-5,
                                y.data(), mean.data(), rstd.data());
          k::ref::group_norm_forward(cs.N, cs.C, cs.S, cs.G, x.data(), opt(affine, gamma), opt(affine, beta), 1e-5,
                                     wy.data(), wm.data(), wr.data());
          check_close(y, wy, total, tol<T>(), tol<T>());
          check_close(mean, wm, rows, tol<T>(), tol<T>());
          check_close(rstd, wr, rows, tol<T>(), tol<T>());
          std::vector<T> dx(total), dg(cs.C), db(cs.C), wdx(total), wdg(cs.C), wdb(cs.C);
          k::group_norm_backward(cs.N, cs.C, cs.S, cs.G, dy.data(), x.data(), wm.data(), wr.data(),
                                 opt(affine, gamma), dx.data(), opt(want_params, dg), opt(want_params, db));
          k::ref::group_norm_backward(cs.N, cs.C, cs.S, cs.G, dy.data(), x.data(), wm.data(), wr.data(),
                                      opt(affine, gamma), wdx.data(), wdg.data(), wdb.data());
          check_close(dx, wdx, total, tol<T>(), tol<T>());
          if (want_params) {
            check_close(dg, wdg, cs.C, tol<T>(), tol<T>());
            check_close(db, wdb, cs.C, tol<T>(), tol<T>());
          }
        }
      }
  });
}

template <typename T>
void test_batch_norm() {
  struct Case { int64_t N, C, L; };
  std::vector<Case> cases;
  for (int64_t c : tail_lengths()) cases.push_back({5, c, 1});  // (N, C): SIMD along C
  for (int64_t l : tail_lengths()) cases.push_back({4, 3, l});  // (N, C, L): SIMD along L
  cases.push_back({1, 9, 1});
  cases.push_back({1, 2, 6});
  cases.push_back({300, 3, 1});
  for_each_target([&] {
    for (const Case& cs : cases)
      for (int mode = 0; mode < 8; ++mode) {
        const bool affine = mode & 1, training = mode & 2, want_params = mode & 4;
        BOOST_TEST_CONTEXT("N=" << cs.N << " C=" << cs.C << " L=" << cs.L << " affine=" << affine
                                << " training=" << training << " dparams=" << want_params) {
          const int64_t total = cs.N * cs.C * cs.L, C = cs.C;
          auto x = random_vec<T>(total, -2, 2, 17 + cs.C + cs.L);
          for (int64_t i = 0; i < total; i += 2) x[i] += T(30);  // a large mean, mixed with small values
          const auto dy = random_vec<T>(total, -1, 1, 18 + cs.C + cs.L);
          const auto gamma = random_vec<T>(C, 0.5, 1.5, 19), beta = random_vec<T>(C, -1, 1, 20);
          std::vector<T> mean(C), var(C), wm(C), wv(C);
          k::batch_norm_stats(cs.N, C, cs.L, x.data(), mean.data(), var.data());
          k::ref::batch_norm_stats(cs.N, C, cs.L, x.data(), wm.data(), wv.data());
          check_close(mean, wm, C, tol<T>(), tol<T>());
          check_close(var, wv, C, tol<T>(), tol<T>());
          // rstd as the functional layer makes it: from the batch (training) or stand-in running stats.
          std::vector<T> mu(C), rstd(C);
          for (int64_t c = 0; c < C; ++c) {
            mu[c] = training ? wm[c] : T(0.3 * c - 0.2);
            rstd[c] = static_cast<T>(k::ref::inv_std(training ? wv[c] : 0.5 + c, 1e-5));
          }
          std::vector<T> y(total + 1, T(-7)), wy(total);
          k::batch_norm_normalize(cs.N, C, cs.L, x.data(), mu.data(), rstd.data(), opt(affine, gamma),
                                  opt(affine, beta), y.data());
          k::ref::batch_norm_normalize(cs.N, C, cs.L, x.data(), mu.data(), rstd.data(), opt(affine, gamma),
                                       opt(affine, beta), wy.data());
          check_close(y, wy, total, tol<T>(), tol<T>());
          BOOST_TEST(y[total] == T(-7));
          std::vector<T> dx(total + 1, T(-7)), dg(C), db(C), wdx(total), wdg(C), wdb(C);
          k::batch_norm_backward(cs.N, C, cs.L, dy.data(), x.data(), mu.data(), rstd.data(), opt(affine, gamma),
                                 training, dx.data(), opt(want_params, dg), opt(want_params, db));
          k::ref::batch_norm_backward(cs.N, C, cs.L, dy.data(), x.data(), mu.data(), rstd.data(),
                                      opt(affine, gamma), training, wdx.data(), wdg.data(), wdb.data());
          // dx sums m terms that cancel to O(1): its error scales with the row sums, not with dx.
          check_close(dx, wdx, total, tol<T>(), tol<T>() * (sizeof(T) == 4 ? 3 : 1));
          BOOST_TEST(dx[total] == T(-7));
          if (want_params) {
            check_close(dg, wdg, C, tol<T>(), tol<T>());
            check_close(db, wdb, C, tol<T>(), tol<T>());
          }
        }
      }
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(norm_kernels)

BOOST_AUTO_TEST_CASE(layer_norm_forward_f32) { test_layer_norm_forward<float>(); }
BOOST_AUTO_TEST_CASE(layer_norm_forward_f64) { test_layer_norm_forward<double>(); }
BOOST_AUTO_TEST_CASE(layer_norm_backward_f32) { test_layer_norm_backward<float>(); }
BOOST_AUTO_TEST_CASE(layer_norm_backward_f64) { test_layer_norm_backward<double>(); }
BOOST_AUTO_TEST_CASE(rms_norm_f32) { test_rms_norm<float>(); }
BOOST_AUTO_TEST_CASE(rms_norm_f64) { test_rms_norm<double>(); }
BOOST_AUTO_TEST_CASE(group_norm_f32) { test_group_norm<float>(); }
BOOST_AUTO_TEST_CASE(group_norm_f64) { test_group_norm<double>(); }
BOOST_AUTO_TEST_CASE(batch_norm_f32) { test_batch_norm<float>(); }
BOOST_AUTO_TEST_CASE(batch_norm_f64) { test_batch_norm<double>(); }

// The reference itself against hand-computed numbers (seed 000's first row and seed 004), so the
// kernels are not only checked against a reference that could share their mistake.
BOOST_AUTO_TEST_CASE(reference_matches_hand_computation) {
  // x = [0.2, 0.1, 0.3]: mu = 0.2, var = 0.02/3, y = (x - mu) / sqrt(var + 1e-5).
  const double x[3] = {0.2, 0.1, 0.3};
  double y[3], mean, rstd;
  k::ref::layer_norm_forward<double>(1, 3, x, nullptr, nullptr, 1e-5, y, &mean, &rstd);
  const double r = 1 / std::sqrt(0.02 / 3 + 1e-5);
  const double want[3] = {0.0, -0.1 * r, 0.1 * r};
  check_close(y, want, 3, 1e-12, 1e-12);
  BOOST_TEST(std::fabs(mean - 0.2) < 1e-15);
  BOOST_TEST(std::fabs(rstd - r) < 1e-12);
  // BatchNorm (N, C) = (2, 1): values 1 and 3: mean 2, biased var 1.
  const double b[2] = {1, 3};
  double bm, bv;
  k::ref::batch_norm_stats<double>(2, 1, 1, b, &bm, &bv);
  BOOST_TEST(bm == 2.0);
  BOOST_TEST(bv == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()
