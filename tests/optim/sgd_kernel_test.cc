// The fused SGD kernel on every Highway target against its scalar reference, for every flag
// combination and for lengths that exercise the vector body and the one-lane tail.
#include <boost/test/unit_test.hpp>
#include <random>
#include <string>
#include <vector>

#include "autograd/parallel.h"
#include "optim/kernels/sgd.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"
#include "tests/support/threads.h"

namespace k = normlab::optim::kernels;
using normlab::test::check_close;
using normlab::test::for_each_target;
using normlab::test::tail_lengths;

using normlab::test::random_vec;

namespace {

// Every valid flag combination, each with the buffer new (first) and old.
std::vector<k::SGDStep> all_steps() {
  std::vector<k::SGDStep> out;
  for (double momentum : {0.0, 0.9})
    for (double dampening : {0.0, 0.25})
      for (double wd : {0.0, 0.01})
        for (bool nesterov : {false, true})
          for (bool maximize : {false, true})
            for (bool first : {false, true}) {
              if (nesterov && (momentum == 0 || dampening != 0)) continue;
              if (momentum == 0 && (first || dampening != 0)) continue;
              out.push_back({.lr = 0.03, .momentum = momentum, .dampening = dampening, .weight_decay = wd,
                             .nesterov = nesterov, .maximize = maximize, .first = first});
            }
  return out;
}

template <typename T>
void test_sgd_kernel() {
  // MulAdd is fused on AVX2 and up, not below: results differ from the reference by rounding only.
  const double tol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  const T sentinel = T(-12345);
  for_each_target([&] {
    BOOST_REQUIRE_EQUAL(std::string(k::active_target()), std::string(normlab::autograd::kernels::active_target()));
    for (const k::SGDStep& s : all_steps())
      for (int64_t n : tail_lengths()) {
        BOOST_TEST_CONTEXT("momentum=" << s.momentum << " dampening=" << s.dampening << " wd=" << s.weight_decay
                                       << " nesterov=" << s.nesterov << " maximize=" << s.maximize
                                       << " first=" << s.first << " n=" << n) {
          const auto theta = random_vec<T>(n, -1, 1, 3 + n), grad = random_vec<T>(n, -2, 2, 5 + n);
          const auto buf = random_vec<T>(n, -1, 1, 7 + n);
          // One extra element past the end, which must not be written.
          std::vector<T> got_theta(theta), got_buf(buf), want_theta(theta), want_buf(buf);
          got_theta.push_back(sentinel);
          got_buf.push_back(sentinel);
          const bool momentum = s.momentum != 0;
          k::sgd_step(s, n, got_theta.data(), grad.data(), momentum ? got_buf.data() : nullptr);
          k::ref::sgd_step(s, n, want_theta.data(), grad.data(), momentum ? want_buf.data() : nullptr);
          check_close(got_theta, want_theta, n, tol, tol);
          check_close(got_buf, want_buf, n, tol, tol);  // unchanged without momentum
          BOOST_TEST(got_theta[n] == sentinel);
          BOOST_TEST(got_buf[n] == sentinel);
        }
      }
  });
}

// A large parameter is updated in parts on the thread pool (a worker woken just before, as in a
// training step, where the update follows the backward's parallel jobs): on 1, 2 and 3 threads the
// same bits, and within the reference's rounding, on every target, with momentum and without.
template <typename T>
void test_sgd_kernel_threads() {
  const int64_t n = (int64_t(1) << 17) + 37;
  const auto theta = random_vec<T>(n, -1, 1, 31), grad = random_vec<T>(n, -2, 2, 32), buf = random_vec<T>(n, -1, 1, 33);
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 and 3 threads
  for_each_target([&] {
    for (const k::SGDStep s : {k::SGDStep{.lr = 0.03}, k::SGDStep{.lr = 0.03, .momentum = 0.9, .weight_decay = 0.01}}) {
      const bool momentum = s.momentum != 0;
      std::vector<T> want_theta(theta), want_buf(buf);
      k::ref::sgd_step(s, n, want_theta.data(), grad.data(), momentum ? want_buf.data() : nullptr);
      std::vector<std::vector<T>> thetas, bufs;
      for (int threads : {1, 2, 3}) {
        normlab::autograd::set_num_threads(threads);
        thetas.push_back(theta), bufs.push_back(buf);
        normlab::test::wake_workers(threads);  // the update splits only when a worker is awake
        k::sgd_step(s, n, thetas.back().data(), grad.data(), momentum ? bufs.back().data() : nullptr);
      }
      BOOST_TEST_CONTEXT("momentum " << s.momentum) {
        const double tol = sizeof(T) == 4 ? 1e-6 : 1e-14;
        check_close(thetas[0], want_theta, n, tol, tol);
        check_close(bufs[0], want_buf, n, tol, tol);
        BOOST_TEST((thetas[1] == thetas[0] && thetas[2] == thetas[0]), "theta differs between 1, 2 and 3 threads");
        BOOST_TEST((bufs[1] == bufs[0] && bufs[2] == bufs[0]), "buf differs between 1, 2 and 3 threads");
      }
    }
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sgd_kernel)

BOOST_AUTO_TEST_CASE(large_parameters_split_over_threads_float32) { test_sgd_kernel_threads<float>(); }
BOOST_AUTO_TEST_CASE(large_parameters_split_over_threads_float64) { test_sgd_kernel_threads<double>(); }

BOOST_AUTO_TEST_CASE(matches_scalar_reference_on_every_target_float32) { test_sgd_kernel<float>(); }
BOOST_AUTO_TEST_CASE(matches_scalar_reference_on_every_target_float64) { test_sgd_kernel<double>(); }

BOOST_AUTO_TEST_CASE(scalar_reference_follows_pytorch_rule_by_hand) {
  // theta = 1, grad = 2, buf = 0.5, lr = 0.1, momentum 0.9, dampening 0.5, weight decay 0.1:
  // g = 2 + 0.1 * 1 = 2.1; buf = 0.9 * 0.5 + 0.5 * 2.1 = 1.5; theta = 1 - 0.1 * 1.5 = 0.85.
  double theta = 1, grad = 2, buf = 0.5;
  k::ref::sgd_step<double>({.lr = 0.1, .momentum = 0.9, .dampening = 0.5, .weight_decay = 0.1}, 1, &theta, &grad, &buf);
  BOOST_TEST(buf == 1.5, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(theta == 0.85, boost::test_tools::tolerance(1e-15));
  // Nesterov, maximize, first step: g = -2 + 0.1 * 0.85 = -1.915; buf = g; g = g + 0.9 buf = -3.6385;
  // theta = 0.85 + 0.36385 = 1.21385.
  k::ref::sgd_step<double>({.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true, .maximize = true,
                            .first = true},
                           1, &theta, &grad, &buf);
  BOOST_TEST(buf == -1.915, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(theta == 1.21385, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_SUITE_END()
