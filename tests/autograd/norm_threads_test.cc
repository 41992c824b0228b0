// The normalization kernels on threads: on every Highway target, shapes big enough to be split
// (several row parts, channel splits, outputs large enough for streaming stores, rows that start
// unaligned) give bitwise identical results for 1, 2 and 3 threads, and agree with the scalar
// references (which also covers the part-wise dgamma/dbeta sums and the streamed rows).
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "autograd/kernels/norm.h"
#include "autograd/parallel.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"
#include "tests/support/threads.h"

namespace k = normlab::autograd::kernels;
using normlab::autograd::num_threads;
using normlab::autograd::set_num_threads;
using normlab::test::check_close;

using normlab::test::random_vec;

namespace {

// Every grain 0 while a test runs, so that its shapes are split on 2 and 3 threads.
using normlab::test::ThreadsGuard;

// Runs compute(shift) (which fills its outputs, the big ones `shift` elements into their buffers)
// at 1, 2 and 3 threads with shifts 0, 1 and 2, so that rows start at other alignments too; every
// output must have the same bits as at 1 thread. Returns the 1-thread outputs.
template <typename T, class F>
std::vector<std::vector<T>> same_bits_on_1_2_3_threads(const F& compute) {
  std::vector<std::vector<T>> first;
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    std::vector<std::vector<T>> out = compute(t - 1);
    if (t == 1) {
      first = out;
      continue;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      BOOST_REQUIRE_EQUAL(out[i].size(), first[i].size());
      BOOST_TEST(std::memcmp(out[i].data(), first[i].data(), out[i].size() * sizeof(T)) == 0,
                 "output " << i << ": 1 vs " << t << " threads differ");
    }
  }
  return first;
}

// v without its first `shift` elements.
template <typename T>
std::vector<T> from(const std::vector<T>& v, int64_t shift) {
  return std::vector<T>(v.begin() + shift, v.end());
}

// Float sums of about a thousand terms against double ones.
template <typename T> double tol() { return sizeof(T) == 4 ? 1e-4 : 1e-11; }

template <typename T>
void check_layer_norm() {
  struct Case { int64_t rows, n; };
  // Several row parts; the last two write more than 4 MiB (streaming stores) with rows of 1030
  // values, so most rows start at an address that is not vector-aligned.
  const std::vector<Case> cases = {{301, 257}, {1000, 67}, {70, 1031}, {1100, 1030}};
  normlab::test::for_each_target([&] {
    for (const Case& cs : cases)
      BOOST_TEST_CONTEXT("rows=" << cs.rows << " n=" << cs.n) {
        const int64_t rows = cs.rows, n = cs.n, total = rows * n;
        auto x = random_vec<T>(total, -2, 2, 31);
        for (int64_t j = 0; j < n; ++j) x[j] += T(300);  // row 0 has a large mean
        const auto dy = random_vec<T>(total, -1, 1, 32), gamma = random_vec<T>(n, 0.5, 1.5, 33),
                   beta = random_vec<T>(n, -1, 1, 34);
        const auto got = same_bits_on_1_2_3_threads<T>([&](int64_t shift) {
          std::vector<T> y(total + shift), mean(rows), lo(rows), rstd(rows), dx(total + shift), dg(n), db(n);
          k::layer_norm_forward(rows, n, x.data(), gamma.data(), beta.data(), 1e-5, y.data() + shift, mean.data(),
                                lo.data(), rstd.data());
          k::layer_norm_backward(rows, n, dy.data(), x.data(), mean.data(), lo.data(), rstd.data(), gamma.data(),
                                 dx.data() + shift, dg.data(), db.data());
          return std::vector<std::vector<T>>{from(y, shift), mean, lo, rstd, from(dx, shift), dg, db};
        });
        std::vector<T> y(total), mean(rows), lo(rows), rstd(rows), dx(total), dg(n), db(n);
        k::ref::layer_norm_forward(rows, n, x.data(), gamma.data(), beta.data(), 1e-5, y.data(), mean.data(),
                                   lo.data(), rstd.data());
        k::ref::layer_norm_backward(rows, n, dy.data(), x.data(), mean.data(), lo.data(), rstd.data(), gamma.data(),
                                    dx.data(), dg.data(), db.data());
        check_close(got[0], y, total, tol<T>(), tol<T>());
        check_close(got[3], rstd, rows, tol<T>(), tol<T>());
        check_close(got[4], dx, total, tol<T>(), tol<T>());
        check_close(got[5], dg, n, tol<T>(), tol<T>());
        check_close(got[6], db, n, tol<T>(), tol<T>());
      }
  });
}

template <typename T>
void check_rms_norm_backward() {
  const int64_t rows = 301, n = 257, total = rows * n;
  normlab::test::for_each_target([&] {
    const auto x = random_vec<T>(total, -2, 2, 41), dy = random_vec<T>(total, -1, 1, 42),
               gamma = random_vec<T>(n, 0.5, 1.5, 43);
    std::vector<T> y(total), rstd(rows);
    k::ref::rms_norm_forward(rows, n, x.data(), gamma.data(), 1e-6, y.data(), rstd.data());
    const auto got = same_bits_on_1_2_3_threads<T>([&](int64_t shift) {
      std::vector<T> dx(total + shift), dg(n);
      k::rms_norm_backward(rows, n, dy.data(), x.data(), rstd.data(), gamma.data(), dx.data() + shift, dg.data());
      return std::vector<std::vector<T>>{from(dx, shift), dg};
    });
    std::vector<T> dx(total), dg(n);
    k::ref::rms_norm_backward(rows, n, dy.data(), x.data(), rstd.data(), gamma.data(), dx.data(), dg.data());
    check_close(got[0], dx, total, tol<T>(), tol<T>());
    check_close(got[1], dg, n, tol<T>(), tol<T>());
  });
}

template <typename T>
void check_batch_norm() {
  struct Case { int64_t N, C, L; };
  // (N, C): channel splits at multiples of 16 (C = 45: two parts, the second with a tail;
  // C = 257: up to three parts), one with streaming stores; (N, C, L): channels and rows split.
  const std::vector<Case> cases = {{300, 257, 1}, {2000, 45, 1}, {1100, 1030, 1}, {40, 30, 70}};
  normlab::test::for_each_target([&] {
    for (const Case& cs : cases)
      for (bool training : {true, false})
        BOOST_TEST_CONTEXT("N=" << cs.N << " C=" << cs.C << " L=" << cs.L << " training=" << training) {
          const int64_t C = cs.C, total = cs.N * C * cs.L;
          auto x = random_vec<T>(total, -2, 2, 51);
          for (int64_t i = 0; i < total; i += 3) x[i] += T(30);
          const auto dy = random_vec<T>(total, -1, 1, 52), gamma = random_vec<T>(C, 0.5, 1.5, 53),
                     beta = random_vec<T>(C, -1, 1, 54);
          // Statistics as the functional layer passes them (computed by the kernel under test in
          // training, so they are compared too; stand-in running statistics in eval).
          auto stats = [&](std::vector<T>& mean, std::vector<T>& lo, std::vector<T>& var, std::vector<T>& rstd) {
            if (training) {
              k::batch_norm_stats(cs.N, C, cs.L, x.data(), mean.data(), lo.data(), var.data());
            } else {
              for (int64_t c = 0; c < C; ++c) mean[c] = T(0.3 * c - 0.2), lo[c] = 0, var[c] = T(0.5 + c);
            }
            for (int64_t c = 0; c < C; ++c) rstd[c] = static_cast<T>(k::ref::inv_std(var[c], 1e-5));
          };
          const auto got = same_bits_on_1_2_3_threads<T>([&](int64_t shift) {
            std::vector<T> mean(C), lo(C), var(C), rstd(C), y(total + shift), dx(total + shift), dg(C), db(C);
            stats(mean, lo, var, rstd);
            const T* mlo = training ? lo.data() : nullptr;
            k::batch_norm_normalize(cs.N, C, cs.L, x.data(), mean.data(), mlo, rstd.data(), gamma.data(),
                                    beta.data(), y.data() + shift);
            k::batch_norm_backward(cs.N, C, cs.L, dy.data(), x.data(), mean.data(), mlo, rstd.data(), gamma.data(),
                                   training, dx.data() + shift, dg.data(), db.data());
            return std::vector<std::vector<T>>{mean, lo, var, from(y, shift), from(dx, shift), dg, db};
          });
          std::vector<T> mean(C), lo(C), var(C), rstd(C), y(total), dx(total), dg(C), db(C);
          if (training) k::ref::batch_norm_stats(cs.N, C, cs.L, x.data(), mean.data(), lo.data(), var.data());
          else mean = got[0], lo = got[1], var = got[2];
          check_close(got[2], var, C, tol<T>(), tol<T>());
          for (int64_t c = 0; c < C; ++c) rstd[c] = static_cast<T>(k::ref::inv_std(var[c], 1e-5));
          // The reference on the kernel's own statistics: the passes are checked one at a time.
          std::vector<T> grstd(C);
          for (int64_t c = 0; c < C; ++c) grstd[c] = static_cast<T>(k::ref::inv_std(got[2][c], 1e-5));
          const T* mlo = training ? got[1].data() : nullptr;
          k::ref::batch_norm_normalize(cs.N, C, cs.L, x.data(), got[0].data(), mlo, grstd.data(), gamma.data(),
                                       beta.data(), y.data());
          k::ref::batch_norm_backward(cs.N, C, cs.L, dy.data(), x.data(), got[0].data(), mlo, grstd.data(),
                                      gamma.data(), training, dx.data(), dg.data(), db.data());
          check_close(got[3], y, total, tol<T>(), tol<T>());
          check_close(got[4], dx, total, tol<T>(), tol<T>());
          check_close(got[5], dg, C, tol<T>(), tol<T>());
          check_close(got[6], db, C, tol<T>(), tol<T>());
        }
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(norm_threads)

BOOST_AUTO_TEST_CASE(layer_norm_bitwise_identical_for_1_2_3_threads_f32) {
  ThreadsGuard guard;
  check_layer_norm<float>();
}
BOOST_AUTO_TEST_CASE(layer_norm_bitwise_identical_for_1_2_3_threads_f64) {
  ThreadsGuard guard;
  check_layer_norm<double>();
}
BOOST_AUTO_TEST_CASE(rms_norm_backward_bitwise_identical_for_1_2_3_threads_f32) {
  ThreadsGuard guard;
  check_rms_norm_backward<float>();
}
BOOST_AUTO_TEST_CASE(batch_norm_bitwise_identical_for_1_2_3_threads_f32) {
  ThreadsGuard guard;
  check_batch_norm<float>();
}
BOOST_AUTO_TEST_CASE(batch_norm_bitwise_identical_for_1_2_3_threads_f64) {
  ThreadsGuard guard;
  check_batch_norm<double>();
}

BOOST_AUTO_TEST_SUITE_END()
