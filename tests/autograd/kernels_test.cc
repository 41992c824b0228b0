// Every elementwise and reduction kernel, on every Highway target, against its scalar reference.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/reduce.h"
#include "autograd/kernels/stream.h"
#include "autograd/parallel.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"
#include "tests/support/threads.h"

namespace k = normlab::autograd::kernels;
using normlab::test::check_close;
using normlab::test::for_each_target;
using normlab::test::tail_lengths;

using normlab::test::random_vec;

namespace {

// Tolerances: transcendental functions are a few ulp off the libm reference.
template <typename T> double rtol() { return sizeof(T) == 4 ? 2e-6 : 1e-13; }

template <typename T>
void test_unary() {
  struct Case { k::UnaryOp op; double lo, hi, p; double tol; };
  const double f = sizeof(T) == 4 ? 1 : 1e-7;
  const std::vector<Case> cases = {
      {k::UnaryOp::Neg, -5, 5, 0, 0},         {k::UnaryOp::Exp, -80, 80, 0, 4e-6 * f},
      {k::UnaryOp::Log, 1e-6, 1e6, 0, 4e-6 * f}, {k::UnaryOp::Sqrt, 0, 100, 0, 1e-6 * f},
      {k::UnaryOp::Relu, -3, 3, 0, 0},        {k::UnaryOp::Tanh, -20, 20, 0, 4e-6 * f},
      {k::UnaryOp::Sigmoid, -30, 30, 0, 4e-6 * f}, {k::UnaryOp::Gelu, -8, 8, 0, 1e-5 * f},
      {k::UnaryOp::Pow, 0.1, 4, 2, 1e-6 * f}, {k::UnaryOp::Pow, -4, 4, 3, 1e-6 * f},
      {k::UnaryOp::Pow, 0.1, 4, -1, 1e-6 * f}, {k::UnaryOp::Pow, 0.1, 4, 0.5, 1e-5 * f},
      {k::UnaryOp::Pow, 0.1, 4, 1.7, 1e-5 * f}, {k::UnaryOp::Scale, -3, 3, 2.5, 1e-7 * f},
      {k::UnaryOp::Pow, -1.3, -0.7, 65, 1e-5 * f}, {k::UnaryOp::Pow, 0.7, 1.3, 65, 1e-5 * f},
      {k::UnaryOp::Pow, -1.3, -0.7, -100, 1e-5 * f}, {k::UnaryOp::Pow, -1.3, -0.7, 2.5, 0},
  };
  for_each_target([&] {
    for (const Case& c : cases)
      for (int64_t n : tail_lengths()) {
        BOOST_TEST_CONTEXT("unary op " << int(c.op) << " p=" << c.p << " n=" << n) {
          auto x = random_vec<T>(n, c.lo, c.hi, 7 + n);
          std::vector<T> got(n + 1, T(-7)), want(n);
          k::unary(c.op, n, x.data(), got.data(), c.p);
          k::ref::unary(c.op, n, x.data(), want.data(), c.p);
          check_close(got, want, n, c.tol, c.op == k::UnaryOp::Gelu ? 1e-6 * f : 0);
          BOOST_TEST(got[n] == T(-7));  // nothing written past the end
        }
      }
  });
}

template <typename T>
void test_unary_grad() {
  struct Case { k::UnaryGradOp op; double lo, hi, p; };
  const std::vector<Case> cases = {{k::UnaryGradOp::Relu, -3, 3, 0}, {k::UnaryGradOp::Gelu, -6, 6, 0},
                                   {k::UnaryGradOp::Tanh, -1, 1, 0}, {k::UnaryGradOp::Sigmoid, 0, 1, 0},
                                   {k::UnaryGradOp::Pow, 0.1, 3, 3}, {k::UnaryGradOp::Pow, 0.1, 3, 1.5}};
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-11;
  for_each_target([&] {
    for (const Case& c : cases)
      for (int64_t n : tail_lengths()) {
        BOOST_TEST_CONTEXT("unary grad op " << int(c.op) << " n=" << n) {
          auto v = random_vec<T>(n, c.lo, c.hi, 11 + n), g = random_vec<T>(n, -2, 2, 13 + n);
          std::vector<T> got(n), want(n);
          k::unary_grad(c.op, n, v.data(), g.data(), got.data(), c.p);
          k::ref::unary_grad(c.op, n, v.data(), g.data(), want.data(), c.p);
          check_close(got, want, n, tol, tol);
        }
      }
  });
}

// gelu_forward (the GELU that keeps its derivative for the backward): y with the same bits as
// unary(Gelu) on every target and length; g dydx within rounding of unary_grad(Gelu) (the same
// formula; whether the compiler fuses its last multiply and add differs between the two kernels'
// tails and between optimization levels: in the release build they agree bitwise over whole
// vectors, under the sanitizers' -O1 they need not); y and dydx close to the scalar reference, and
// dydx to a float64 evaluation of the derivative; nothing past the end.
template <typename T>
void test_gelu_keeping_derivative() {
  const double f = sizeof(T) == 4 ? 1 : 1e-7;
  for_each_target([&] {
    for (int64_t n : tail_lengths()) {
      BOOST_TEST_CONTEXT("n=" << n) {
        const auto x = random_vec<T>(n, -8, 8, 17 + n), g = random_vec<T>(n, -2, 2, 19 + n);
        std::vector<T> y(n + 1, T(-7)), dydx(n + 1, T(-7));
        k::gelu_forward(n, x.data(), y.data(), dydx.data());
        std::vector<T> y_unary(n), dx_unary(n), y_ref(n), d_ref(n), dx(n), d64(n);
        k::unary(k::UnaryOp::Gelu, n, x.data(), y_unary.data());
        k::unary_grad(k::UnaryGradOp::Gelu, n, x.data(), g.data(), dx_unary.data());
        BOOST_TEST(std::equal(y_unary.begin(), y_unary.end(), y.begin()));
        for (int64_t i = 0; i < n; ++i) dx[i] = g[i] * dydx[i];
        check_close(dx, dx_unary, n, 1e-6 * f, 1e-6 * f);
        k::ref::gelu_forward(n, x.data(), y_ref.data(), d_ref.data());
        check_close(y, y_ref, n, 1e-5 * f, 1e-6 * f);
        check_close(dydx, d_ref, n, 2e-5 * f, 2e-5 * f);
        for (int64_t i = 0; i < n; ++i) {  // d/dx [x sigmoid(2u)] in float64
          const double v = x[i], u = k::ref::kGeluC * (v + k::ref::kGeluA * v * v * v);
          const double s = 1 / (1 + std::exp(-2 * u));
          d64[i] = static_cast<T>(s + 2 * v * s * (1 - s) * k::ref::kGeluC * (1 + 3 * k::ref::kGeluA * v * v));
        }
        check_close(dydx, d64, n, 2e-5 * f, 2e-5 * f);
        BOOST_TEST(y[n] == T(-7));
        BOOST_TEST(dydx[n] == T(-7));
      }
    }
  });
}

template <typename T>
void test_binary() {
  // (out shape, a strides, b strides) covering flat, row broadcast, column broadcast, scalars.
  struct Case { std::vector<int64_t> size, sa, sb; };
  std::vector<Case> cases = {
      {{37}, {1}, {1}},           {{5, 17}, {17, 1}, {0, 1}}, {{5, 17}, {1, 0}, {17, 1}},
      {{3, 4, 9}, {36 / 3, 0, 1}, {0, 9, 1}},
      {{6, 7}, {1, 6}, {7, 1}},   // a transposed: the strided (scalar) path
  };
  // The three one-loop plans at every tail length: flat, tensor op scalar, scalar op tensor.
  for (int64_t n : tail_lengths()) {
    cases.push_back({{n}, {1}, {1}});
    cases.push_back({{n}, {1}, {0}});
    cases.push_back({{n}, {0}, {1}});
  }
  const std::vector<k::BinaryOp> ops = {k::BinaryOp::Add, k::BinaryOp::Sub, k::BinaryOp::Mul, k::BinaryOp::Div,
                                        k::BinaryOp::Eq};
  for_each_target([&] {
    for (const Case& c : cases)
      for (k::BinaryOp op : ops) {
        k::BroadcastPlan p;
        p.rank = static_cast<int>(c.size.size());
        int64_t total = 1;
        for (int d = 0; d < p.rank; ++d) p.size[d] = c.size[d], p.sa[d] = c.sa[d], p.sb[d] = c.sb[d], total *= c.size[d];
        auto a = random_vec<T>(total, 0.5, 2, 3 + total), b = random_vec<T>(total, 0.5, 2, 5 + total);
        if (op == k::BinaryOp::Eq)  // values on a grid of 7, so that about one pair in 7 is equal
          for (auto* v : {&a, &b})
            for (T& x : *v) x = std::round(x * 4) / 4;
        std::vector<T> got(total + 1, T(-7)), want(total);
        k::binary(op, p, a.data(), b.data(), got.data());
        k::ref::binary(op, p, a.data(), b.data(), want.data());
        BOOST_TEST_CONTEXT("binary op " << int(op) << " plan size " << c.size[0] << " sa " << c.sa[0] << " sb "
                                        << c.sb[0] << " total " << total) {
          // One IEEE operation per element on every target: bitwise equal.
          for (int64_t i = 0; i < total; ++i) BOOST_TEST(got[i] == want[i], "element " << i);
          BOOST_TEST(got[total] == T(-7));  // nothing written past the end
          if (op == k::BinaryOp::Eq && total >= 64) {  // the grid gave both outcomes
            BOOST_TEST(std::count(want.begin(), want.end(), T(1)) > 0);
            BOOST_TEST(std::count(want.begin(), want.end(), T(0)) > 0);
          }
        }
      }
  });
}

template <typename T>
void test_reduce() {
  for_each_target([&] {
    for (int op = 0; op < 2; ++op)
      for (int64_t n : tail_lengths()) {
        const auto rop = static_cast<k::ReduceOp>(op);
        if (rop == k::ReduceOp::Max && n == 0) continue;
        for (auto [outer, inner] : {std::pair<int64_t, int64_t>{1, 1}, {3, 1}, {2, 5}, {1, 17}}) {
          auto x = random_vec<T>(outer * n * inner, -1, 1, 17 + n);
          std::vector<T> got(outer * inner), want(outer * inner);
          k::reduce(rop, outer, n, inner, x.data(), got.data());
          k::ref::reduce(rop, outer, n, inner, x.data(), want.data());
          BOOST_TEST_CONTEXT("reduce op " << op << " (" << outer << ", " << n << ", " << inner << ")") {
            check_close(got, want, outer * inner, sizeof(T) == 4 ? 1e-5 : 1e-12, sizeof(T) == 4 ? 1e-4 : 1e-12);
          }
        }
      }
  });
}

// Column sums and maxima (inner > 1, e.g. a bias gradient, sum over dim 0): every SIMD target
// combines each column in row order like the scalar reference, so the results are bitwise equal;
// widths from tail_lengths() cover the 4-vector blocks, single vectors and the scalar tail.
template <typename T>
void test_reduce_columns_bitwise() {
  for_each_target([&] {
    for (int op = 0; op < 2; ++op)
      for (int64_t inner : tail_lengths()) {
        if (inner < 2) continue;
        for (int64_t r : {1, 3, 128}) {
          const auto rop = static_cast<k::ReduceOp>(op);
          auto x = random_vec<T>(2 * r * inner, -1, 1, 5 + inner);
          std::vector<T> got(2 * inner), want(2 * inner);
          k::reduce(rop, 2, r, inner, x.data(), got.data());
          k::ref::reduce(rop, 2, r, inner, x.data(), want.data());
          BOOST_TEST_CONTEXT("reduce op " << op << " (2, " << r << ", " << inner << ")") {
            for (int64_t i = 0; i < 2 * inner; ++i) BOOST_TEST(got[i] == want[i]);
          }
        }
      }
  });
}

template <typename T>
void test_axpy() {
  // alpha 0.3 is not a power of 2: alpha x is rounded, and fused (AVX2 and up) and unfused
  // multiply-adds differ by at most an ulp of it.
  const double rtol = sizeof(T) == 4 ? 1e-6 : 1e-15, atol = sizeof(T) == 4 ? 1e-7 : 1e-16;
  for_each_target([&] {
    for (int64_t n : tail_lengths()) {
      BOOST_TEST_CONTEXT("axpy n=" << n) {
        auto x = random_vec<T>(n, -1, 1, 1 + n), y = random_vec<T>(n, -1, 1, 2 + n), want = y;
        y.push_back(T(-7));
        k::axpy(n, 0.3, x.data(), y.data());
        k::ref::axpy(n, 0.3, x.data(), want.data());
        check_close(y, want, n, rtol, atol);
        BOOST_TEST(y[n] == T(-7));  // nothing written past the end
      }
    }
  });
}

// fill on every target, for every tail length, with a value that is not a round number and a
// negative zero (kept as -0): every element written, nothing before or past the range.
template <typename T>
void test_fill() {
  for_each_target([&] {
    for (int64_t n : tail_lengths())
      for (T value : {T(0.3), T(-0.0)}) {
        BOOST_TEST_CONTEXT("fill n=" << n << " value " << value) {
          std::vector<T> out(static_cast<size_t>(n + 2), T(-7));
          k::fill(n, value, out.data() + 1);
          bool same = out[0] == T(-7) && out[static_cast<size_t>(n + 1)] == T(-7);
          for (int64_t i = 1; i <= n; ++i) same = same && out[i] == value && std::signbit(out[i]) == std::signbit(value);
          BOOST_TEST(same);
        }
      }
  });
}

// Outputs that cannot stay cached beside their inputs are written with non-temporal stores after
// a one-lane head up to the first vector-aligned address (here with the last-level cache taken
// as 1 MiB): outputs starting 0..3 elements past an aligned address, flat and in rows of 1003
// (each row its own head and tail), on 1 and 2 threads, against the reference bit for bit, and
// nothing written past the end.
template <typename T>
void test_streamed_outputs() {
  const int64_t n = (int64_t(1) << 20) / static_cast<int64_t>(sizeof(T)) + 37, cols = 1003, rows = n / cols + 1;
  k::set_last_level_cache_bytes_for_test(int64_t(1) << 20);
  BOOST_REQUIRE(k::stream_elementwise(n, 1, sizeof(T)));
  BOOST_REQUIRE(!k::stream_elementwise(n / 4, 1, sizeof(T)));
  const auto a = random_vec<T>(rows * cols, -2, 2, 91), b = random_vec<T>(rows * cols, -2, 2, 92);
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 and 3 threads
  for_each_target([&] {
    for (int threads : {1, 2})
      for (int64_t offset : {0, 1, 3}) {
        normlab::autograd::set_num_threads(threads);
        BOOST_TEST_CONTEXT("threads " << threads << " output offset " << offset) {
          std::vector<T> buf(rows * cols + 64 + 1), want(rows * cols);
          T* out = buf.data() + offset;
          auto check = [&](int64_t total, const char* what) {
            BOOST_TEST_CONTEXT(what) {
              BOOST_TEST(std::equal(want.begin(), want.begin() + total, out));
              BOOST_TEST(out[total] == T(-7));
            }
          };
          auto reset = [&] { std::fill(buf.begin(), buf.end(), T(-7)); };
          reset();
          k::unary(k::UnaryOp::Relu, n, a.data(), out, 0);
          k::ref::unary(k::UnaryOp::Relu, n, a.data(), want.data(), 0);
          check(n, "relu");
          reset();
          k::unary_grad(k::UnaryGradOp::Relu, n, a.data(), b.data(), out, 0);
          k::ref::unary_grad(k::UnaryGradOp::Relu, n, a.data(), b.data(), want.data(), 0);
          check(n, "relu grad");
          k::BroadcastPlan flat;
          flat.rank = 1, flat.size[0] = n, flat.sa[0] = 1, flat.sb[0] = 1;
          reset();
          k::binary(k::BinaryOp::Add, flat, a.data(), b.data(), out);
          k::ref::binary(k::BinaryOp::Add, flat, a.data(), b.data(), want.data());
          check(n, "add");
          k::BroadcastPlan bias;  // (rows, cols) * (cols): the rows broadcast b
          bias.rank = 2, bias.size[0] = rows, bias.size[1] = cols, bias.sa[0] = cols, bias.sa[1] = 1, bias.sb[1] = 1;
          reset();
          k::binary(k::BinaryOp::Mul, bias, a.data(), b.data(), out);
          k::ref::binary(k::BinaryOp::Mul, bias, a.data(), b.data(), want.data());
          check(rows * cols, "row-broadcast mul");
        }
      }
  });
  k::set_last_level_cache_bytes_for_test(0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kernels)

BOOST_AUTO_TEST_CASE(elementwise_streams_only_what_cannot_stay_cached) {
  k::set_last_level_cache_bytes_for_test(int64_t(32) << 20);
  const int64_t four_mib = int64_t(1) << 20;  // floats
  BOOST_TEST(!k::stream_elementwise(4 * four_mib, 1, sizeof(float)));  // relu of 16 MiB: 32 MiB in all
  BOOST_TEST(k::stream_elementwise(4 * four_mib, 2, sizeof(float)));   // add of 16 MiB: 48 MiB
  BOOST_TEST(!k::stream_elementwise(four_mib, 2, sizeof(float)));
  k::set_last_level_cache_bytes_for_test(0);
  BOOST_TEST(k::last_level_cache_bytes() > 0);
}

BOOST_AUTO_TEST_CASE(streamed_outputs_f32) { test_streamed_outputs<float>(); }
BOOST_AUTO_TEST_CASE(streamed_outputs_f64) { test_streamed_outputs<double>(); }

BOOST_AUTO_TEST_CASE(reduce_columns_bitwise_f32) { test_reduce_columns_bitwise<float>(); }
BOOST_AUTO_TEST_CASE(reduce_columns_bitwise_f64) { test_reduce_columns_bitwise<double>(); }

BOOST_AUTO_TEST_CASE(unary_f32) { test_unary<float>(); }
BOOST_AUTO_TEST_CASE(unary_f64) { test_unary<double>(); }
BOOST_AUTO_TEST_CASE(unary_grad_f32) { test_unary_grad<float>(); }
BOOST_AUTO_TEST_CASE(unary_grad_f64) { test_unary_grad<double>(); }
BOOST_AUTO_TEST_CASE(gelu_keeping_derivative_f32) { test_gelu_keeping_derivative<float>(); }
BOOST_AUTO_TEST_CASE(gelu_keeping_derivative_f64) { test_gelu_keeping_derivative<double>(); }
BOOST_AUTO_TEST_CASE(binary_f32) { test_binary<float>(); }
BOOST_AUTO_TEST_CASE(binary_f64) { test_binary<double>(); }
BOOST_AUTO_TEST_CASE(reduce_f32) { test_reduce<float>(); }
BOOST_AUTO_TEST_CASE(reduce_f64) { test_reduce<double>(); }

BOOST_AUTO_TEST_CASE(axpy_f32) { test_axpy<float>(); }
BOOST_AUTO_TEST_CASE(axpy_f64) { test_axpy<double>(); }
BOOST_AUTO_TEST_CASE(fill_f32) { test_fill<float>(); }
BOOST_AUTO_TEST_CASE(fill_f64) { test_fill<double>(); }

// Eq is IEEE equality: NaN equals nothing (so a NaN maximum gets no gradient), -0 == +0.
BOOST_AUTO_TEST_CASE(binary_eq_special_values) {
  const double nan = std::nan(""), inf = INFINITY;
  const std::vector<double> a = {nan, nan, 0.0, -0.0, inf, -inf, inf, 1.0, 2.0};
  const std::vector<double> b = {nan, 1.0, -0.0, 0.0, inf, -inf, -inf, 1.0, 2.0 + 4.5e-16};
  const std::vector<double> want = {0, 0, 1, 1, 1, 1, 0, 1, 0};
  k::BroadcastPlan p;
  p.rank = 1, p.size[0] = static_cast<int64_t>(a.size()), p.sa[0] = 1, p.sb[0] = 1;
  for_each_target([&] {
    std::vector<double> got(a.size());
    k::binary(k::BinaryOp::Eq, p, a.data(), b.data(), got.data());
    for (size_t i = 0; i < a.size(); ++i) BOOST_TEST(got[i] == want[i], "element " << i);
    std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), gotf(a.size());
    k::binary(k::BinaryOp::Eq, p, af.data(), bf.data(), gotf.data());
    for (size_t i = 0; i < a.size(); ++i) {  // in float, 2 + 4.5e-16 is 2
      BOOST_TEST(gotf[i] == (i == a.size() - 1 ? 1.f : static_cast<float>(want[i])), "float element " << i);
    }
  });
}

// Special values: NaN propagates through every activation, exp overflows to inf, log(0) = -inf.
BOOST_AUTO_TEST_CASE(special_values) {
  const float nan = std::nanf(""), inf = INFINITY;
  for_each_target([&] {
    for (auto op : {k::UnaryOp::Exp, k::UnaryOp::Log, k::UnaryOp::Tanh, k::UnaryOp::Sigmoid, k::UnaryOp::Relu,
                    k::UnaryOp::Gelu, k::UnaryOp::Sqrt}) {
      float x = nan, y = 0;
      k::unary(op, 1, &x, &y);
      BOOST_TEST_CONTEXT("op " << int(op)) { BOOST_TEST(std::isnan(y)); }
    }
    float in[4] = {100.f, 0.f, -1.f, inf}, out[4];
    k::unary(k::UnaryOp::Exp, 1, in, out);
    BOOST_TEST(out[0] == inf);
    k::unary(k::UnaryOp::Log, 4, in, out);
    BOOST_TEST(out[1] == -inf);
    BOOST_TEST(std::isnan(out[2]));
    BOOST_TEST(out[3] == inf);
    float big[2] = {-100.f, 100.f}, s[2];
    k::unary(k::UnaryOp::Sigmoid, 2, big, s);
    BOOST_TEST(s[0] >= 0.f);
    BOOST_TEST(s[0] < 1e-40f);
    BOOST_TEST(s[1] == 1.f);
  });
}

BOOST_AUTO_TEST_SUITE_END()
