// Every normalization kernel, on every Highway target, float and double, against its scalar
// reference (double accumulation), with row/channel lengths from tail_lengths().
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/kernels/norm.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"

namespace k = normlab::autograd::kernels;
using normlab::test::check_close;
using normlab::test::tail_lengths;

using normlab::test::random_vec;

namespace {

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

// The mean pairs (mean + mean_lo) agree: compared as their sums in double, to the precision of T
// squared (plus the rounding of the sums of the data).
template <typename T>
void check_mean(const std::vector<T>& hi, const std::vector<T>& lo, const std::vector<T>& want_hi,
                const std::vector<T>& want_lo, int64_t n) {
  std::vector<double> got(n), want(n);
  for (int64_t i = 0; i < n; ++i) got[i] = double(hi[i]) + lo[i], want[i] = double(want_hi[i]) + want_lo[i];
  check_close(got, want, n, sizeof(T) == 4 ? 1e-7 : 1e-15, tol<T>());
  check_close(hi, want_hi, n, tol<T>(), tol<T>());
}

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
          std::vector<T> y(rows * n + 1, T(-7)), mean(rows), lo(rows), rstd(rows), wy(rows * n), wm(rows), wl(rows),
              wr(rows);
          k::layer_norm_forward(rows, n, x.data(), opt(hg, gamma), opt(hb, beta), 1e-5, y.data(), mean.data(),
                                lo.data(), rstd.data());
          k::ref::layer_norm_forward(rows, n, x.data(), opt(hg, gamma), opt(hb, beta), 1e-5, wy.data(), wm.data(),
                                     wl.data(), wr.data());
          check_close(y, wy, rows * n, tol<T>(), tol<T>());
          check_mean(mean, lo, wm, wl, rows);
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
          std::vector<T> y(rows * n), mean(rows), lo(rows), rstd(rows);
          k::ref::layer_norm_forward(rows, n, x.data(), opt(hg, gamma), (const T*)nullptr, 1e-5, y.data(),
                                     mean.data(), lo.data(), rstd.data());
          std::vector<T> dx(rows * n + 1, T(-7)), dg(n, T(9)), db(n, T(9)), wdx(rows * n), wdg(n), wdb(n);
          k::layer_norm_backward(rows, n, dy.data(), x.data(), mean.data(), lo.data(), rstd.data(), opt(hg, gamma),
                                 opt(want_dx, dx), opt(want_params, dg), opt(want_params, db));
          k::ref::layer_norm_backward(rows, n, dy.data(), x.data(), mean.data(), lo.data(), rstd.data(),
                                      opt(hg, gamma), wdx.data(), wdg.data(), wdb.data());
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
          std::vector<T> y(total), mean(rows), lo(rows), rstd(rows), wy(total), wm(rows), wl(rows), wr(rows);
          k::group_norm_forward(cs.N, cs.C, cs.S, cs.G, x.data(), opt(affine, gamma), opt(affine, beta), 1e-5,
                                y.data(), mean.data(), lo.data(), rstd.data());
          k::ref::group_norm_forward(cs.N, cs.C, cs.S, cs.G, x.data(), opt(affine, gamma), opt(affine, beta), 1e-5,
                                     wy.data(), wm.data(), wl.data(), wr.data());
          check_close(y, wy, total, tol<T>(), tol<T>());
          check_mean(mean, lo, wm, wl, rows);
          check_close(rstd, wr, rows, tol<T>(), tol<T>());
          std::vector<T> dx(total), dg(cs.C), db(cs.C), wdx(total), wdg(cs.C), wdb(cs.C);
          k::group_norm_backward(cs.N, cs.C, cs.S, cs.G, dy.data(), x.data(), wm.data(), wl.data(), wr.data(),
                                 opt(affine, gamma), dx.data(), opt(want_params, dg), opt(want_params, db));
          k::ref::group_norm_backward(cs.N, cs.C, cs.S, cs.G, dy.data(), x.data(), wm.data(), wl.data(), wr.data(),
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
          std::vector<T> mean(C), lo(C), var(C), wm(C), wl(C), wv(C);
          k::batch_norm_stats(cs.N, C, cs.L, x.data(), mean.data(), lo.data(), var.data());
          k::ref::batch_norm_stats(cs.N, C, cs.L, x.data(), wm.data(), wl.data(), wv.data());
          check_mean(mean, lo, wm, wl, C);
          check_close(var, wv, C, tol<T>(), tol<T>());
          // Statistics as the functional layer passes them: the batch's (training, with mean_lo) or
          // stand-in running statistics (eval, no mean_lo).
          std::vector<T> mu(C), rstd(C);
          for (int64_t c = 0; c < C; ++c) {
            mu[c] = training ? wm[c] : T(0.3 * c - 0.2);
            rstd[c] = static_cast<T>(k::ref::inv_std(training ? wv[c] : 0.5 + c, 1e-5));
          }
          const T* mlo = training ? wl.data() : nullptr;
          std::vector<T> y(total + 1, T(-7)), wy(total);
          k::batch_norm_normalize(cs.N, C, cs.L, x.data(), mu.data(), mlo, rstd.data(), opt(affine, gamma),
                                  opt(affine, beta), y.data());
          k::ref::batch_norm_normalize(cs.N, C, cs.L, x.data(), mu.data(), mlo, rstd.data(), opt(affine, gamma),
                                       opt(affine, beta), wy.data());
          check_close(y, wy, total, tol<T>(), tol<T>());
          BOOST_TEST(y[total] == T(-7));
          std::vector<T> dx(total + 1, T(-7)), dg(C), db(C), wdx(total), wdg(C), wdb(C);
          k::batch_norm_backward(cs.N, C, cs.L, dy.data(), x.data(), mu.data(), mlo, rstd.data(),
                                 opt(affine, gamma), training, dx.data(), opt(want_params, dg), opt(want_params, db));
          k::ref::batch_norm_backward(cs.N, C, cs.L, dy.data(), x.data(), mu.data(), mlo, rstd.data(),
                                      opt(affine, gamma), training, wdx.data(), wdg.data(), wdb.data());
          // dx sums m terms that cancel to O(1): its error scales with the row sums, not with dx.
          check_close(dx, wdx, total, tol<T>(), tol<T>() * (sizeof(T) == 4 ? 3 : 1));
          BOOST_TEST(dx[total] == T(-7));
          if (want_params) {
            // dgamma = sum(dy xhat) over m = N*L terms of up to ~25 in size (the +30 inputs under the
            // eval statistics) that cancel: T's summation error grows with sum |dy xhat|, and the
            // lane order differs between targets (AVX3's 16 float lanes: 2.2e-4 off a sum of 5.76).
            std::vector<double> abs_g(C, 0.0), abs_b(C, 0.0);
            for (int64_t n = 0; n < cs.N; ++n)
              for (int64_t c = 0; c < C; ++c)
                for (int64_t l = 0; l < cs.L; ++l) {
                  const int64_t i = (n * C + c) * cs.L + l;
                  abs_g[c] += std::fabs(double(dy[i]) * (double(x[i]) - mu[c]) * rstd[c]);
                  abs_b[c] += std::fabs(double(dy[i]));
                }
            const double u = std::numeric_limits<T>::epsilon() / 2;  // unit roundoff
            for (int64_t c = 0; c < C; ++c)
              BOOST_TEST_CONTEXT("channel " << c) {
                check_close(&dg[c], &wdg[c], 1, tol<T>(), tol<T>() + 4 * u * abs_g[c]);
                check_close(&db[c], &wdb[c], 1, tol<T>(), tol<T>() + 4 * u * abs_b[c]);
              }
          }
        }
      }
  });
}

// channel_combine (the double backward's second sweep) against its reference: SIMD along C (L = 1)
// and along L, with and without each optional input; the element past the end untouched.
template <typename T>
void test_channel_combine() {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> cases;
  for (int64_t c : tail_lengths()) cases.push_back({5, c, 1});
  for (int64_t l : tail_lengths()) cases.push_back({3, 2, l});
  for_each_target([&] {
    for (const auto& [N, C, L] : cases)
      for (int mode = 0; mode < 4; ++mode) {
        const bool with_a = mode & 1, with_g = mode & 2;
        BOOST_TEST_CONTEXT("N=" << N << " C=" << C << " L=" << L << " a=" << with_a << " g=" << with_g) {
          const int64_t total = N * C * L;
          auto x = random_vec<T>(total, -2, 2, 31 + C + L);
          for (int64_t i = 0; i < total; i += 3) x[i] += T(30);
          const auto a = random_vec<T>(total, -1, 1, 32 + C), g = random_vec<T>(total, -1, 1, 33 + L);
          const auto coef = random_vec<T>(5 * C, -2, 2, 34 + C);
          std::vector<T> out(total + 1, T(-7)), want(total);
          k::channel_combine(N, C, L, opt(with_a, a), x.data(), opt(with_g, g), coef.data(), out.data());
          k::ref::channel_combine(N, C, L, opt(with_a, a), x.data(), opt(with_g, g), coef.data(), want.data());
          check_close(out, want, total, tol<T>(), tol<T>());
          BOOST_TEST(out[total] == T(-7));
        }
      }
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(norm_kernels)

BOOST_AUTO_TEST_CASE(channel_combine_f32) { test_channel_combine<float>(); }
BOOST_AUTO_TEST_CASE(channel_combine_f64) { test_channel_combine<double>(); }

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

// Float32 data with a large mean (1e4 + randn, seed 003's rows, here also as batch columns): on
// every target the kernels' statistics and outputs match float64 to 1e-5, which a mean rounded to
// float32 (spacing ~1e-3 at 1e4) or E[x^2] - E[x]^2 could not give.
BOOST_AUTO_TEST_CASE(large_mean_keeps_float32_precision) {
  const int64_t R = 64, n = 257;
  std::mt19937 gen(5);
  std::normal_distribution<double> nd(0, 1);
  std::vector<float> x(R * n), dy(R * n);
  for (auto& v : x) v = static_cast<float>(1e4 + nd(gen));
  for (auto& v : dy) v = static_cast<float>(nd(gen));
  const std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
  for_each_target([&] {
    // LayerNorm over rows of n, float32 vs the float64 reference on the same values.
    std::vector<float> y(R * n), m(R), lo(R), r(R), dx(R * n);
    std::vector<double> wy(R * n), wm(R), wl(R), wr(R), wdx(R * n);
    k::layer_norm_forward(R, n, x.data(), nullptr, nullptr, 1e-5, y.data(), m.data(), lo.data(), r.data());
    k::ref::layer_norm_forward<double>(R, n, xd.data(), nullptr, nullptr, 1e-5, wy.data(), wm.data(), wl.data(), wr.data());
    check_close(y, wy, R * n, 1e-5, 1e-5);
    check_close(r, wr, R, 1e-5, 0);
    k::layer_norm_backward(R, n, dy.data(), x.data(), m.data(), lo.data(), r.data(), nullptr, dx.data(), nullptr,
                           nullptr);
    k::ref::layer_norm_backward<double>(R, n, dyd.data(), xd.data(), wm.data(), wl.data(), wr.data(), nullptr, wdx.data(),
                                nullptr, nullptr);
    check_close(dx, wdx, R * n, 1e-4, 1e-5);
    // GroupNorm: 2 groups of channels of 257 positions.
    std::vector<float> gm(R), glo(R), gr(R);
    k::group_norm_forward(R / 2, 4, n / 2, 2, x.data(), nullptr, nullptr, 1e-5, y.data(), gm.data(), glo.data(),
                          gr.data());
    k::ref::group_norm_forward<double>(R / 2, 4, n / 2, 2, xd.data(), nullptr, nullptr, 1e-5, wy.data(), wm.data(),
                               wl.data(), wr.data());
    check_close(y, wy, (R / 2) * 4 * (n / 2), 1e-5, 1e-5);
    // BatchNorm: (N, C) = (R, n) with L = 1 (Welford), and (R, 1, n) with L > 1.
    for (auto [N, C, L] : {std::tuple<int64_t, int64_t, int64_t>{R, n, 1}, {R, 1, n}, {R / 2, 2, n}}) {
      BOOST_TEST_CONTEXT("BatchNorm (" << N << ", " << C << ", " << L << ")") {
        std::vector<float> bm(C), bl(C), bv(C), br(C), by(N * C * L), bdx(N * C * L);
        std::vector<double> wbm(C), wbl(C), wbv(C), wbr(C), wby(N * C * L), wbdx(N * C * L);
        k::batch_norm_stats(N, C, L, x.data(), bm.data(), bl.data(), bv.data());
        k::ref::batch_norm_stats<double>(N, C, L, xd.data(), wbm.data(), wbl.data(), wbv.data());
        check_close(bv, wbv, C, 1e-5, 0);
        for (int64_t c = 0; c < C; ++c) {
          br[c] = static_cast<float>(k::ref::inv_std(bv[c], 1e-5));
          wbr[c] = k::ref::inv_std(wbv[c], 1e-5);
        }
        k::batch_norm_normalize(N, C, L, x.data(), bm.data(), bl.data(), br.data(), nullptr, nullptr, by.data());
        k::ref::batch_norm_normalize<double>(N, C, L, xd.data(), wbm.data(), wbl.data(), wbr.data(), nullptr, nullptr,
                                     wby.data());
        check_close(by, wby, N * C * L, 1e-5, 1e-5);
        k::batch_norm_backward(N, C, L, dy.data(), x.data(), bm.data(), bl.data(), br.data(), nullptr, true,
                               bdx.data(), nullptr, nullptr);
        k::ref::batch_norm_backward<double>(N, C, L, dyd.data(), xd.data(), wbm.data(), wbl.data(), wbr.data(), nullptr, true,
                                    wbdx.data(), nullptr, nullptr);
        check_close(bdx, wbdx, N * C * L, 1e-4, 1e-5);
      }
    }
  });
}

// BatchNorm's float32 statistics at a large batch (N = 8192 rows, as BatchNorm over the B x T
// tokens of a GPT batch), against float64 on the same values: their error must not grow with N.
// A running float32 mean down 8192 rows drifts by about sqrt(N) ulp (the normalized output's mean
// was 6e-6 from 0; PyTorch's 5e-8); the kernel's blocked Welford with float64 merges, and its
// float64 sums over the runs of the (N, C, L) layout, keep the mean (with mean_lo) within 5e-8 of
// the std, the variance within 2e-7 of itself (about 1 ulp) and the normalized output's mean
// within 5e-8 of 0 (PyTorch's figure) on every target.
BOOST_AUTO_TEST_CASE(batch_statistics_keep_their_precision_at_a_large_batch) {
  std::mt19937 gen(11);
  std::normal_distribution<double> nd(0, 1);
  for (auto [N, C, L] : {std::tuple<int64_t, int64_t, int64_t>{8192, 16, 1}, {8192, 3, 4}}) {
    const int64_t total = N * C * L;
    std::vector<float> x(total);
    for (auto& v : x) v = static_cast<float>(3 + nd(gen));
    const std::vector<double> xd(x.begin(), x.end());
    std::vector<double> wm(C), wl(C), wv(C);
    k::ref::batch_norm_stats<double>(N, C, L, xd.data(), wm.data(), wl.data(), wv.data());
    for_each_target([&] {
      BOOST_TEST_CONTEXT("BatchNorm (" << N << ", " << C << ", " << L << ")") {
        std::vector<float> m(C), lo(C), v(C), r(C), y(total);
        k::batch_norm_stats(N, C, L, x.data(), m.data(), lo.data(), v.data());
        for (int64_t c = 0; c < C; ++c) r[c] = static_cast<float>(k::ref::inv_std(v[c], 1e-5));
        k::batch_norm_normalize(N, C, L, x.data(), m.data(), lo.data(), r.data(), nullptr, nullptr, y.data());
        double worst_mean = 0, worst_var = 0, worst_out = 0;
        for (int64_t c = 0; c < C; ++c) {
          const double sd = std::sqrt(wv[c]);
          worst_mean = std::max(worst_mean, std::abs(double(m[c]) + double(lo[c]) - (wm[c] + wl[c])) / sd);
          worst_var = std::max(worst_var, std::abs(double(v[c]) - wv[c]) / wv[c]);
          double s = 0;  // the normalized output's mean over the channel's N L values
          for (int64_t i = 0; i < N; ++i)
            for (int64_t l = 0; l < L; ++l) s += y[(i * C + c) * L + l];
          worst_out = std::max(worst_out, std::abs(s / double(N * L)));
        }
        BOOST_TEST_MESSAGE("mean " << worst_mean << " var " << worst_var << " out " << worst_out);
        BOOST_TEST(worst_mean < 5e-8);
        BOOST_TEST(worst_var < 2e-7);
        BOOST_TEST(worst_out < 5e-8);
      }
    });
  }
}

// The reference itself against hand-computed numbers (seed 000's first row and seed 004), so the
// kernels are not only checked against a reference that could share their mistake.
BOOST_AUTO_TEST_CASE(reference_matches_hand_computation) {
  // x = [0.2, 0.1, 0.3]: mu = 0.2, var = 0.02/3, y = (x - mu) / sqrt(var + 1e-5).
  const double x[3] = {0.2, 0.1, 0.3};
  double y[3], mean, rstd;
  k::ref::layer_norm_forward<double>(1, 3, x, nullptr, nullptr, 1e-5, y, &mean, nullptr, &rstd);
  const double r = 1 / std::sqrt(0.02 / 3 + 1e-5);
  const double want[3] = {0.0, -0.1 * r, 0.1 * r};
  check_close(y, want, 3, 1e-12, 1e-12);
  BOOST_TEST(std::fabs(mean - 0.2) < 1e-15);
  BOOST_TEST(std::fabs(rstd - r) < 1e-12);
  // BatchNorm (N, C) = (2, 1): values 1 and 3: mean 2, biased var 1.
  const double b[2] = {1, 3};
  double bm, bv;
  k::ref::batch_norm_stats<double>(2, 1, 1, b, &bm, nullptr, &bv);
  BOOST_TEST(bm == 2.0);
  BOOST_TEST(bv == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()
