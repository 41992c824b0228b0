// Thread count: set_num_threads validates its input, and GEMM (reduction, cross-entropy) results
// are bitwise identical for 1, 2 and 3 threads (each element of C is computed by the same sequence of operations).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "autograd/grain.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/reduce.h"
#include "autograd/kernels/softmax.h"
#include "autograd/parallel.h"
#include "base/error.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"
#include "tests/support/threads.h"

namespace k = normlab::autograd::kernels;
using normlab::autograd::num_threads;
using normlab::autograd::set_num_threads;

using normlab::test::random_vec;

namespace {

// Every grain 0 while a test runs, so that its shapes are split on 2 and 3 threads.
using normlab::test::ThreadsGuard;

// Shapes big enough to be split across threads (over a million multiply-adds), with odd sizes:
// by row blocks (sharing packed B panels), by column panels (few rows), by batch items, and a
// batch summed into one C.
template <typename T>
void check_thread_independence() {
  struct Case { int64_t m, n, k, batch; bool ta, tb, sum_batch; };
  const std::vector<Case> cases = {
      {301, 257, 300, 1, false, false, false},  // A of at most 1 MiB: split by columns
      {700, 257, 400, 1, false, false, false},  // A over 1 MiB: split by rows sharing B's panels
      {256, 256, 784, 1, false, true, false},   // A 784 KiB, B^T packed: split by columns
      {256, 784, 128, 1, true, false, false},   // A^T packed once: split by rows
      {700, 5, 301, 1, false, true, false},     // thin: B read in place but for its ragged panel
      {130, 65, 300, 1, true, false, false},
      {65, 300, 130, 1, true, true, false},
      {7, 3001, 300, 1, false, false, false},   // few rows: split by columns
      {11, 1001, 257, 1, true, true, false},
      {5, 3001, 301, 1, false, true, false},    // few rows times B^T: dot products, split by columns
      {1, 3001, 301, 1, false, true, false},    // one row: its own tile of 8 columns
      {16, 2001, 300, 1, false, true, false},   // 16 rows: C^T (on AVX-512 in 256-bit vectors)
      {10, 2001, 300, 1, false, true, false},   // 10 rows: dot products (C^T's tiles would not fill)
      {24, 2001, 300, 1, false, true, false},   // 24 rows: C^T (double on AVX-512: 256-bit vectors)
      {300, 10, 256, 1, false, true, false},    // 10 columns times B^T: C^T (AVX-512: dot products)
      {300, 10, 100, 1, false, true, false},    // the same at K = 100: C^T on every target
      {64, 2001, 790, 1, false, true, false},   // 64 rows, K >= 768: dot products on AVX-512
      {23, 999, 800, 1, false, true, false},
      {128, 784, 256, 1, false, false, false},  // one row block (batch 128): split by columns
      {128, 256, 784, 1, false, true, false},
      {3001, 3, 301, 1, true, false, false},    // A^T times 3 columns: vectors along M, split by rows
      {20, 2001, 300, 1, false, true, false},   // 20 rows times B^T: computed as C^T, split by C's columns
      {20, 999, 300, 3, false, true, true},
      {256, 784, 2, 1, true, false, false},     // K <= 8, B not transposed: rows swept, split by rows
      {301, 33, 8, 1, false, false, false},
      {300, 256, 10, 1, false, false, false},   // K = 10 (dX of a 10-output layer), B in L1
      {67, 65, 5, 3, true, false, true},        // ... with the batch summed into one C
      {67, 65, 129, 5, false, true, false},     // split by batch items
      {67, 65, 129, 3, true, false, true},      // the batch sums into one C: split within it
  };
  normlab::test::for_each_target([&] {
    unsigned seed = 11;
    for (const Case& x : cases) {
      BOOST_TEST_CONTEXT("M=" << x.m << " N=" << x.n << " K=" << x.k << " batch=" << x.batch << " trans " << x.ta
                              << x.tb) {
        k::GemmShape s;
        s.m = x.m, s.n = x.n, s.k = x.k, s.batch = x.batch, s.trans_a = x.ta, s.trans_b = x.tb;
        s.stride_a = x.m * x.k, s.stride_b = x.k * x.n, s.stride_c = x.sum_batch ? 0 : x.m * x.n;
        const auto a = random_vec<T>(x.batch * x.m * x.k, seed++);
        const auto b = random_vec<T>(x.batch * x.k * x.n, seed++);
        const size_t nc = static_cast<size_t>((x.sum_batch ? 1 : x.batch) * x.m * x.n);
        std::vector<std::vector<T>> out;
        for (int t : {1, 2, 3}) {
          set_num_threads(t);
          out.emplace_back(nc, T(0));
          k::gemm(s, a.data(), b.data(), out.back().data());
        }
        BOOST_TEST(std::memcmp(out[0].data(), out[1].data(), nc * sizeof(T)) == 0, "1 vs 2 threads differ");
        BOOST_TEST(std::memcmp(out[0].data(), out[2].data(), nc * sizeof(T)) == 0, "1 vs 3 threads differ");
      }
    }
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(threads)

BOOST_AUTO_TEST_CASE(default_is_all_cores) {
  const unsigned hw = std::thread::hardware_concurrency();
  BOOST_TEST(num_threads() == (hw == 0 ? 1 : static_cast<int>(hw)));
}

BOOST_AUTO_TEST_CASE(set_and_read_back) {
  ThreadsGuard guard;
  set_num_threads(3);
  BOOST_TEST(num_threads() == 3);
  set_num_threads(1);
  BOOST_TEST(num_threads() == 1);
}

BOOST_AUTO_TEST_CASE(zero_or_negative_is_an_error) {
  ThreadsGuard guard;
  for (int n : {0, -2}) {
    BOOST_CHECK_EXCEPTION(set_num_threads(n), normlab::Error, [n](const normlab::Error& e) {
      return std::string(e.what()) == "threads must be at least 1, got " + std::to_string(n);
    });
  }
  BOOST_TEST(num_threads() == guard.saved_threads);  // unchanged by the failed calls
}

// The rule of autograd/grain.h: min(threads, work / grain) threads, 1 below two grains' work, all
// of them when the grain is 0 or the work is large; the defaults are positive and restored.
BOOST_AUTO_TEST_CASE(threads_for_follows_the_grain) {
  using normlab::autograd::threads_for;
  {
    ThreadsGuard guard;
    set_num_threads(3);
    BOOST_TEST(threads_for(10, 0) == 3);
    BOOST_TEST(threads_for(0, 0) == 3);
    BOOST_TEST(threads_for(0, 100) == 1);
    BOOST_TEST(threads_for(199, 100) == 1);
    BOOST_TEST(threads_for(200, 100) == 2);
    BOOST_TEST(threads_for(299, 100) == 2);
    BOOST_TEST(threads_for(300, 100) == 3);
    BOOST_TEST(threads_for(1e12, 100) == 3);
    set_num_threads(1);
    BOOST_TEST(threads_for(1e12, 0) == 1);
    BOOST_TEST(normlab::autograd::grains().gemm == 0);  // the guard zeroes them
  }
  const normlab::autograd::Grains g = normlab::autograd::grains(), d = normlab::autograd::default_grains();
  for (double x : {d.gemm, d.gemm_intensity, d.conv, d.elementwise, d.reduce, d.norm, d.batch_norm, d.attention,
                   d.pooling, d.embedding, d.optimizer})
    BOOST_TEST(x > 0);
  BOOST_TEST(g.gemm == d.gemm);  // restored
  BOOST_TEST(g.optimizer == d.optimizer);
}

BOOST_AUTO_TEST_CASE(gemm_bitwise_identical_for_1_2_3_threads_f32) {
  ThreadsGuard guard;
  check_thread_independence<float>();
}

BOOST_AUTO_TEST_CASE(gemm_bitwise_identical_for_1_2_3_threads_f64) {
  ThreadsGuard guard;
  check_thread_independence<double>();
}

// Reductions large enough to be split between threads (by outputs, or by columns when there are
// fewer outputs than threads) give bitwise the same sums and maxima for 1, 2 and 3 threads.
BOOST_AUTO_TEST_CASE(reduce_bitwise_identical_for_1_2_3_threads) {
  ThreadsGuard guard;
  struct Case { int64_t outer, r, inner; };
  for (const Case c : {Case{1, 600, 1000}, Case{1, 300, 1001}, Case{2, 300, 999}, Case{3, 500, 200},
                       Case{1000, 301, 1}, Case{2, 200000, 1}}) {
    const auto x = random_vec<float>(c.outer * c.r * c.inner, 11);
    for (int op = 0; op < 2; ++op) {
      std::vector<std::vector<float>> outs;
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        outs.emplace_back(static_cast<size_t>(c.outer * c.inner));
        k::reduce(static_cast<k::ReduceOp>(op), c.outer, c.r, c.inner, x.data(), outs.back().data());
      }
      BOOST_TEST_CONTEXT("op " << op << " (" << c.outer << ", " << c.r << ", " << c.inner << ")") {
        for (size_t t = 1; t < outs.size(); ++t)
          BOOST_TEST(std::memcmp(outs[t].data(), outs[0].data(), outs[0].size() * sizeof(float)) == 0);
        std::vector<float> want(outs[0].size());  // and right: the scalar reference, loosely
        k::ref::reduce(static_cast<k::ReduceOp>(op), c.outer, c.r, c.inner, x.data(), want.data());
        for (size_t i = 0; i < want.size(); ++i)
          BOOST_TEST(std::abs(outs[0][i] - want[i]) <= 1e-3f * (1 + std::abs(want[i])));
      }
    }
  }
}

// Large elementwise calls split over the pool (kernels/elementwise.cc): the same bits for 1, 2 and
// 3 threads on every target, for lengths around the split threshold and parts that end in tails.
BOOST_AUTO_TEST_CASE(elementwise_bitwise_identical_for_1_2_3_threads) {
  ThreadsGuard guard;
  normlab::test::for_each_target([&] {
    for (int64_t n : {int64_t(65535), int64_t(65536), int64_t(200003)}) {
      const auto x = random_vec<float>(n, 3), g = random_vec<float>(n, 4);
      std::vector<std::vector<float>> outs;
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        std::vector<float> all;
        for (auto op : {k::UnaryOp::Exp, k::UnaryOp::Gelu, k::UnaryOp::Relu, k::UnaryOp::Tanh}) {
          std::vector<float> y(n);
          k::unary(op, n, x.data(), y.data());
          all.insert(all.end(), y.begin(), y.end());
        }
        std::vector<float> dx(n), z = g;
        k::unary_grad(k::UnaryGradOp::Gelu, n, x.data(), g.data(), dx.data());
        k::axpy(n, 0.37, x.data(), z.data());
        all.insert(all.end(), dx.begin(), dx.end());
        std::vector<float> gy(n), gd(n);  // the GELU that keeps its derivative
        k::gelu_forward(n, x.data(), gy.data(), gd.data());
        for (const auto* v : {&gy, &gd}) all.insert(all.end(), v->begin(), v->end());
        all.insert(all.end(), z.begin(), z.end());
        k::BroadcastPlan flat;  // flat a * b, and a (n/7 rows, 7) plus a row vector b (7)
        flat.rank = 1, flat.size[0] = n, flat.sa[0] = 1, flat.sb[0] = 1;
        std::vector<float> ab(n);
        k::binary(k::BinaryOp::Mul, flat, x.data(), g.data(), ab.data());
        all.insert(all.end(), ab.begin(), ab.end());
        k::BroadcastPlan rows;
        rows.rank = 2, rows.size[0] = n / 7, rows.size[1] = 7, rows.sa[0] = 7, rows.sa[1] = 1, rows.sb[0] = 0, rows.sb[1] = 1;
        std::vector<float> rb(n / 7 * 7);
        k::binary(k::BinaryOp::Add, rows, x.data(), g.data(), rb.data());
        all.insert(all.end(), rb.begin(), rb.end());
        outs.push_back(std::move(all));
      }
      BOOST_TEST_CONTEXT("n " << n) {
        BOOST_TEST(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)) == 0);
        BOOST_TEST(std::memcmp(outs[0].data(), outs[2].data(), outs[0].size() * sizeof(float)) == 0);
        // and right: the last Add against its definition
        for (int64_t i = 0; i < n / 7 * 7; ++i) BOOST_TEST(outs[0][outs[0].size() - n / 7 * 7 + i] == x[i] + g[i % 7]);
      }
    }
  });
}

// cross_entropy's softmax rows and the loss summed over them give bitwise the same results for 1,
// 2 and 3 threads (an input of 1.1M elements, over any threading threshold).
BOOST_AUTO_TEST_CASE(cross_entropy_bitwise_identical_for_1_2_3_threads) {
  ThreadsGuard guard;
  const int64_t rows = 30000, c = 37;
  const auto x = random_vec<float>(rows * c, 13);
  std::vector<int64_t> target(rows);
  for (int64_t i = 0; i < rows; ++i) target[i] = (i * 7) % c;
  std::vector<std::vector<float>> ps, dxs;
  std::vector<double> losses;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    ps.emplace_back(static_cast<size_t>(rows * c));
    dxs.emplace_back(static_cast<size_t>(rows * c));
    losses.push_back(k::cross_entropy_forward(rows, c, x.data(), target.data(), ps.back().data()));
    k::cross_entropy_backward(rows, c, ps.back().data(), target.data(), 1.0 / rows, dxs.back().data());
  }
  for (size_t t = 1; t < ps.size(); ++t) {
    BOOST_TEST(losses[t] == losses[0]);
    BOOST_TEST(std::memcmp(ps[t].data(), ps[0].data(), ps[0].size() * sizeof(float)) == 0);
    BOOST_TEST(std::memcmp(dxs[t].data(), dxs[0].data(), dxs[0].size() * sizeof(float)) == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()
