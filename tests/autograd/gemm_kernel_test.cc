// kernels::gemm on every Highway target against kernels::ref::gemm: all four transpose
// combinations, sizes that exercise every vector tail in M, N and K, batches with strides
// (including stride 0 broadcast and stride_c 0 accumulation), and accumulate onto C.
#include <sys/mman.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "hwy/aligned_allocator.h"
#include "autograd/parallel.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"
#include "tests/support/threads.h"

namespace k = normlab::autograd::kernels;
using normlab::test::check_close;
using normlab::test::for_each_target;

using normlab::test::random_vec;

namespace {

// Sums of K products of values in [-1, 1], in different orders: rounding error grows with K.
template <typename T>
double tolerance(int64_t k) {
  return (sizeof(T) == 4 ? 2e-6 : 1e-14) * static_cast<double>(k + 1);
}

constexpr float kGuard = -12345.f;  // written past C's last batch: must stay untouched

// Runs s on the kernel and the reference with the same random inputs and initial C.
template <typename T>
void compare(const k::GemmShape& s, unsigned seed) {
  const int64_t last_a = (s.batch - 1) * s.stride_a + s.m * s.k, last_b = (s.batch - 1) * s.stride_b + s.k * s.n;
  const int64_t last_c = (s.batch - 1) * s.stride_c + s.m * s.n;
  const auto a = random_vec<T>(last_a, seed), b = random_vec<T>(last_b, seed + 1);
  auto got = random_vec<T>(last_c + 1, seed + 2);  // the initial C matters when accumulating
  got[last_c] = static_cast<T>(kGuard);
  auto want = got;
  k::gemm(s, a.data(), b.data(), got.data());
  k::ref::gemm(s, a.data(), b.data(), want.data());
  BOOST_TEST_CONTEXT("m " << s.m << " n " << s.n << " k " << s.k << " trans_a " << s.trans_a << " trans_b "
                          << s.trans_b << " batch " << s.batch << " strides " << s.stride_a << "/" << s.stride_b
                          << "/" << s.stride_c << " accumulate " << s.accumulate) {
    check_close(got, want, last_c, 0, tolerance<T>(s.k * (s.stride_c == 0 ? s.batch : 1)));
    BOOST_TEST(got[last_c] == static_cast<T>(kGuard));
  }
}

const std::vector<int64_t> kSizes = {1, 3, 7, 17, 33, 65};

template <typename T>
void test_all_sizes_and_transposes() {
  for_each_target([&] {
    unsigned seed = 1;
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t m : kSizes)
          for (int64_t n : kSizes)
            for (int64_t kk : kSizes) {
              k::GemmShape s;
              s.trans_a = ta, s.trans_b = tb, s.m = m, s.n = n, s.k = kk;
              compare<T>(s, seed += 3);
            }
  });
}

// K of 1 to 16 with B not transposed (rows of C swept with A's K values in registers; K > 8
// only while B takes at most 16 KiB, else the blocked GEMM): every K, both layouts of A, widths
// around the vector lengths, narrow ones (n <= 4 goes its own way) and wide ones.
template <typename T>
void test_small_k() {
  for_each_target([&] {
    unsigned seed = 900;
    for (int64_t kk = 1; kk <= 17; ++kk)
      for (bool ta : {false, true})
        for (int64_t m : {1, 7, 40})
          for (int64_t n : {3, 5, 16, 31, 33, 70, 300}) {
            k::GemmShape s;
            s.trans_a = ta, s.m = m, s.n = n, s.k = kk;
            compare<T>(s, seed += 3);
          }
  });
}

// Few rows times B^T, the Linear forward at small batches: the dot-product tiles (4-row tiles of
// 5 or 6 columns on AVX-512, 2-row tiles, a single row; up to 16 rows when C^T's tiles would not
// fill), and rows 9..32 where C^T = B A^T is computed instead when its tiles (2 vectors wide: 16
// floats on AVX2, 32 or 16 on AVX-512) are at least 3/4 full, else the plain loops; and C^T
// again for few columns (at most half a tile) and more rows. On AVX-512 dot products also take
// up to 64 rows at K >= 768 and few columns at K >= 256 (the second list: 4-row tiles with 1-3
// rows left, 5 columns for n = 10, 25; 6 for 30, 33; K with a scalar tail or none).
template <typename T>
void test_few_rows_times_b_transposed() {
  for_each_target([&] {
    unsigned seed = 500;
    for (int64_t m : {1, 2, 5, 8, 9, 10, 12, 13, 16, 17, 24, 31, 32, 70})
      for (int64_t n : {1, 9, 10, 16, 33, 70})
        for (int64_t kk : {1, 15, 33, 100}) {
          k::GemmShape s;
          s.trans_b = true, s.m = m, s.n = n, s.k = kk;
          compare<T>(s, seed += 3);
        }
    for (int64_t m : {3, 6, 7, 23, 64, 65, 130})
      for (int64_t n : {10, 25, 30, 33})
        for (int64_t kk : {256, 300, 768, 790}) {
          k::GemmShape s;
          s.trans_b = true, s.m = m, s.n = n, s.k = kk;
          compare<T>(s, seed += 3);
        }
  });
}

template <typename T>
void test_batches_and_accumulate() {
  struct Case { int64_t m, n, k, batch; int sa, sb, sc; bool acc; };  // s*: 1 dense, 0 broadcast, 2 padded
  const std::vector<Case> cases = {
      {3, 17, 7, 4, 1, 1, 1, false}, {17, 5, 9, 3, 1, 0, 1, false},  {5, 33, 3, 3, 0, 1, 1, false},
      {7, 9, 17, 5, 1, 1, 0, false}, {4, 18, 6, 3, 0, 1, 0, false},  {6, 4, 33, 2, 2, 2, 2, false},
      {9, 7, 5, 3, 1, 1, 1, true},   {3, 65, 4, 4, 1, 1, 0, true},   {1, 1, 1, 6, 1, 1, 0, false},
      {2, 3, 4, 1, 1, 1, 1, true},   {8, 8, 0, 2, 1, 1, 1, false},   {8, 8, 0, 2, 1, 1, 1, true},
  };
  for_each_target([&] {
    unsigned seed = 100;
    for (const Case& c : cases)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          k::GemmShape s;
          s.trans_a = ta, s.trans_b = tb, s.m = c.m, s.n = c.n, s.k = c.k, s.batch = c.batch, s.accumulate = c.acc;
          auto stride = [](int kind, int64_t size) { return kind == 0 ? 0 : kind == 1 ? size : size + 5; };
          s.stride_a = stride(c.sa, c.m * c.k);
          s.stride_b = stride(c.sb, c.k * c.n);
          s.stride_c = stride(c.sc, c.m * c.n);
          compare<T>(s, seed += 3);
        }
  });
}

// An edge tile of 1-5 rows (computed as a 4-row tile up to 4 rows, else a 6-row one) gives each
// element the same bits as a full 6-row tile: C for m rows equals the first m rows of C for 12
// rows whose first m rows of A are the same. Both layouts of A, K in one block and in several
// (A packed at K >= 1024 when not transposed), with and without accumulation.
template <typename T>
void test_edge_row_tiles_bitwise() {
  constexpr int64_t kFull = 12, n = 45;
  for_each_target([&] {
    unsigned seed = 700;
    for (int64_t kk : {100, 1100})
      for (bool ta : {false, true})
        for (bool acc : {false, true})
          for (int64_t m = 7; m <= 11; ++m) {
            const auto vals = random_vec<T>(kFull * kk, seed++), b = random_vec<T>(kk * n, seed++);
            const auto c0 = random_vec<T>(kFull * n, seed++);
            // a(i, p) = vals[i K + p], stored as A (M, K) or as A^T (K, M) for M rows.
            auto layout = [&](int64_t rows) {
              std::vector<T> a(static_cast<size_t>(rows * kk));
              for (int64_t i = 0; i < rows; ++i)
                for (int64_t p = 0; p < kk; ++p) a[static_cast<size_t>(ta ? p * rows + i : i * kk + p)] = vals[i * kk + p];
              return a;
            };
            k::GemmShape s;
            s.trans_a = ta, s.n = n, s.k = kk, s.accumulate = acc;
            std::vector<T> part(c0.begin(), c0.begin() + m * n), full = c0;
            s.m = m;
            k::gemm(s, layout(m).data(), b.data(), part.data());
            s.m = kFull;
            k::gemm(s, layout(kFull).data(), b.data(), full.data());
            BOOST_TEST_CONTEXT("m " << m << " k " << kk << " trans_a " << ta << " accumulate " << acc) {
              BOOST_TEST(std::memcmp(part.data(), full.data(), part.size() * sizeof(T)) == 0);
            }
          }
  });
}

// With `blocked`, C's rows computed in parts (any split, parts of 1 row up) give the same bits as
// one call over all rows, whatever path the parts' shapes would otherwise take (dot products at
// few rows, small K, C^T), with a residual epilogue as the LSTM recurrence uses it, and on
// 1 and 2 threads; and match the reference.
template <typename T>
void test_blocked_row_parts_bitwise() {
  struct Case { int64_t m, n, k; bool tb; };
  const std::vector<Case> cases = {{37, 512, 128, true}, {40, 33, 12, false}, {19, 70, 300, true},
                                   {33, 128, 512, false}, {24, 9, 1100, true}};
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 threads
  for (int threads : {1, 2}) {
    normlab::autograd::set_num_threads(threads);
    for_each_target([&] {
      unsigned seed = 2100;
      for (const Case& c : cases)
        for (bool residual : {false, true}) {
          const auto a = random_vec<T>(c.m * c.k, seed++), b = random_vec<T>(c.k * c.n, seed++);
          const auto r = random_vec<T>(c.m * c.n, seed++);
          k::GemmShape s;
          s.trans_b = c.tb, s.m = c.m, s.n = c.n, s.k = c.k, s.blocked = true;
          if (residual) s.residual = r.data();
          std::vector<T> whole(static_cast<size_t>(c.m * c.n)), want(whole.size());
          k::gemm(s, a.data(), b.data(), whole.data());
          k::ref::gemm(s, a.data(), b.data(), want.data());
          check_close(whole, want, static_cast<int64_t>(whole.size()), 0, 2 * tolerance<T>(c.k));
          for (int64_t rows : {1, 2, 5, 8, 16, 17}) {
            std::vector<T> parts(whole.size(), T(-7));
            for (int64_t i0 = 0; i0 < c.m; i0 += rows) {
              k::GemmShape p = s;
              p.m = std::min(rows, c.m - i0);
              if (residual) p.residual = r.data() + i0 * c.n;
              k::gemm(p, a.data() + i0 * c.k, b.data(), parts.data() + i0 * c.n);
            }
            BOOST_TEST_CONTEXT("threads " << threads << " m " << c.m << " n " << c.n << " k " << c.k << " trans_b "
                                          << c.tb << " residual " << residual << " rows per part " << rows) {
              BOOST_TEST(std::memcmp(parts.data(), whole.data(), whole.size() * sizeof(T)) == 0);
            }
          }
        }
    });
  }
}

// A B packed once (gemm_pack_b, GemmShape::packed_b) gives the bits of the same call with `blocked`
// on the unpacked B, and matches the reference: both layouts of A and B, N not a whole number of
// micro-panels, several K blocks, N past one column panel (4080), C's rows shared on 2 threads,
// column ranges, a batch over one B (stride_b 0), a bias, a residual, accumulate; a batch of
// several B is refused.
template <typename T>
void test_packed_b() {
  struct Case { int64_t m, n, k; bool ta, tb; int64_t batch; bool bias, residual, accumulate; };
  const std::vector<Case> cases = {
      {16, 512, 128, false, true, 1, false, true, false}, {32, 128, 512, false, false, 1, false, true, false},
      {1, 33, 7, false, false, 1, false, false, false},   {5, 70, 600, true, true, 1, true, false, false},
      {300, 45, 1100, false, true, 1, false, false, true}, {7, 4200, 20, false, false, 1, false, false, false},
      {13, 65, 33, true, false, 3, false, false, false},  {40, 100, 300, false, true, 1, true, false, false},
  };
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 threads
  for (int threads : {1, 2}) {
    normlab::autograd::set_num_threads(threads);
    for_each_target([&] {
      unsigned seed = 2500;
      for (const Case& c : cases) {
        k::GemmShape s;
        s.trans_a = c.ta, s.trans_b = c.tb, s.m = c.m, s.n = c.n, s.k = c.k, s.batch = c.batch;
        s.stride_a = c.m * c.k, s.stride_c = c.m * c.n, s.accumulate = c.accumulate, s.blocked = true;
        const auto a = random_vec<T>(c.batch * c.m * c.k, seed++), b = random_vec<T>(c.k * c.n, seed++);
        const auto bias = random_vec<T>(c.n, seed++), r = random_vec<T>(c.m * c.n, seed++);
        if (c.bias) s.bias = bias.data();
        if (c.residual) s.residual = r.data();
        const auto start = random_vec<T>(c.batch * c.m * c.n, seed++);
        std::vector<T> got = start, blocked = start, want = start;
        k::gemm(s, a.data(), b.data(), blocked.data());
        k::ref::gemm(s, a.data(), b.data(), want.data());
        k::GemmShape p = s;
        p.blocked = false, p.packed_b = true;
        auto packed = hwy::AllocateAligned<T>(static_cast<size_t>(k::gemm_packed_b_size(p, static_cast<const T*>(nullptr))));
        k::gemm_pack_b(p, b.data(), packed.get());
        k::gemm(p, a.data(), packed.get(), got.data());
        BOOST_TEST_CONTEXT("threads " << threads << " m " << c.m << " n " << c.n << " k " << c.k << " trans_a "
                                      << c.ta << " trans_b " << c.tb << " batch " << c.batch) {
          BOOST_TEST(std::memcmp(got.data(), blocked.data(), got.size() * sizeof(T)) == 0);
          check_close(got, want, static_cast<int64_t>(got.size()), 0, 2 * tolerance<T>(c.k));
        }
      }
    });
  }
  k::GemmShape s;
  s.m = 2, s.n = 2, s.k = 2, s.batch = 2, s.stride_a = 4, s.stride_b = 4, s.stride_c = 4, s.packed_b = true;
  std::vector<T> x(8, T(1)), y(8);
  BOOST_CHECK_THROW(k::gemm(s, x.data(), x.data(), y.data()), std::invalid_argument);
}

// A bias (C = bias rows + op(A) op(B)) gives the same bits as filling C with the bias rows and
// accumulating the product onto it (what the other paths do, and Linear did before), on every
// path: dot products, small K, narrow, C^T, the blocked GEMM with one and several K blocks, its
// row blocks shared on 2 threads, and batches; and matches the reference.
template <typename T>
void test_bias_rows() {
  struct Case { int64_t m, n, k; bool ta, tb; int64_t batch; };
  const std::vector<Case> cases = {
      {1, 9, 33, false, true, 1},     {12, 70, 100, false, true, 1}, {24, 33, 15, false, true, 1},
      {70, 10, 300, false, true, 1},  {7, 300, 5, false, false, 1},  {40, 3, 50, true, false, 1},
      {65, 33, 17, false, false, 1},  {65, 33, 17, true, true, 1},   {130, 70, 600, false, true, 1},
      {600, 100, 300, false, true, 1}, {333, 45, 1100, true, false, 1}, {9, 17, 7, false, true, 3},
      {8, 8, 0, false, true, 1},
  };
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 threads
  for (int threads : {1, 2}) {
    normlab::autograd::set_num_threads(threads);
    for_each_target([&] {
      unsigned seed = 1300;
      for (const Case& c : cases) {
        k::GemmShape s;
        s.trans_a = c.ta, s.trans_b = c.tb, s.m = c.m, s.n = c.n, s.k = c.k, s.batch = c.batch;
        s.stride_a = c.m * c.k, s.stride_b = 0, s.stride_c = c.m * c.n;
        const auto a = random_vec<T>(c.batch * c.m * c.k, seed++), b = random_vec<T>(c.k * c.n, seed++);
        const auto bias = random_vec<T>(c.n, seed++);
        std::vector<T> got(static_cast<size_t>(c.batch * c.m * c.n), T(-7)), filled(got.size()), want(got.size());
        for (size_t i = 0; i < filled.size(); ++i) filled[i] = bias[i % static_cast<size_t>(c.n)];
        s.bias = bias.data();
        k::gemm(s, a.data(), b.data(), got.data());
        k::ref::gemm(s, a.data(), b.data(), want.data());
        s.bias = nullptr, s.accumulate = true;
        k::gemm(s, a.data(), b.data(), filled.data());
        BOOST_TEST_CONTEXT("threads " << threads << " m " << c.m << " n " << c.n << " k " << c.k << " trans_a "
                                      << c.ta << " trans_b " << c.tb << " batch " << c.batch) {
          BOOST_TEST(std::memcmp(got.data(), filled.data(), got.size() * sizeof(T)) == 0);
          check_close(got, want, static_cast<int64_t>(got.size()), 0, tolerance<T>(c.k));
        }
      }
    });
  }
}

// The epilogue (C = C * mul, or C = C + residual, on C's final values) gives the same bits as the
// product followed by its own elementwise pass, on every path (dot products, small K, narrow, C^T,
// the blocked GEMM with one and several K blocks, with a bias, row blocks shared on 2 threads),
// and matches the reference; with a batch, accumulate or both operands it is refused.
template <typename T>
void test_epilogue() {
  struct Case { int64_t m, n, k; bool ta, tb, bias; };
  const std::vector<Case> cases = {
      {1, 9, 33, false, true, false},    {12, 70, 100, false, true, true}, {70, 10, 300, false, true, true},
      {7, 300, 5, false, false, false},  {40, 3, 50, true, false, false},  {65, 33, 17, false, false, false},
      {65, 33, 17, true, true, false},   {130, 70, 600, false, true, true}, {600, 100, 300, false, true, false},
      {333, 45, 1100, true, false, false}, {1024, 512, 128, false, false, false}, {8, 8, 0, false, true, true},
  };
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 threads
  for (int threads : {1, 2}) {
    normlab::autograd::set_num_threads(threads);
    for_each_target([&] {
      unsigned seed = 1700;
      for (const Case& c : cases)
        for (bool use_mul : {true, false}) {
          k::GemmShape s;
          s.trans_a = c.ta, s.trans_b = c.tb, s.m = c.m, s.n = c.n, s.k = c.k;
          const auto a = random_vec<T>(c.m * c.k, seed++), b = random_vec<T>(c.k * c.n, seed++);
          const auto bias = random_vec<T>(c.n, seed++), e = random_vec<T>(c.m * c.n, seed++);
          if (c.bias) s.bias = bias.data();
          std::vector<T> got(static_cast<size_t>(c.m * c.n), T(-7)), after(got.size()), want(got.size());
          k::gemm(s, a.data(), b.data(), after.data());
          for (size_t i = 0; i < after.size(); ++i) after[i] = use_mul ? after[i] * e[i] : after[i] + e[i];
          (use_mul ? s.mul : s.residual) = e.data();
          k::gemm(s, a.data(), b.data(), got.data());
          k::ref::gemm(s, a.data(), b.data(), want.data());
          BOOST_TEST_CONTEXT("threads " << threads << " m " << c.m << " n " << c.n << " k " << c.k << " trans_a "
                                        << c.ta << " trans_b " << c.tb << " bias " << c.bias << " mul " << use_mul) {
            BOOST_TEST(std::memcmp(got.data(), after.data(), got.size() * sizeof(T)) == 0);
            check_close(got, want, static_cast<int64_t>(got.size()), 0, 2 * tolerance<T>(c.k));
          }
        }
    });
  }
  k::GemmShape s;
  s.m = s.n = s.k = 4;
  std::vector<T> a(16, T(1)), c(16), e(16, T(2));
  s.mul = e.data(), s.residual = e.data();
  BOOST_CHECK_THROW(k::gemm(s, a.data(), a.data(), c.data()), std::invalid_argument);
  s.residual = nullptr, s.accumulate = true;
  BOOST_CHECK_THROW(k::gemm(s, a.data(), a.data(), c.data()), std::invalid_argument);
  s.accumulate = false, s.batch = 2;
  BOOST_CHECK_THROW(k::gemm(s, a.data(), a.data(), c.data()), std::invalid_argument);
}

// A stored (K, M) and packed (M > 24, dW = dY^T X): its rows are spread over the MR-row panels a
// few rows at a time, with vectors of 8 values for the panels whose vector stays inside A's row
// and element by element for the others and the padded last panel. M around the row-block height
// (144 floats, 72 doubles) and across several blocks, with ragged last panels; K of one row (only
// the last row's scalar copy), a few rows, several K blocks (300: 2 x 150, 530: 3 x 177) and not a
// multiple of 8; on 1 and 2 threads (row blocks at an offset into A's rows).
template <typename T>
void test_transposed_a_packing() {
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 threads
  for (int threads : {1, 2}) {
    normlab::autograd::set_num_threads(threads);
    for_each_target([&] {
      unsigned seed = 1700;
      for (int64_t m : {25, 30, 31, 73, 145, 294})
        for (int64_t kk : {1, 2, 9, 300, 530})
          for (bool acc : {false, true}) {
            k::GemmShape s;
            s.trans_a = true, s.m = m, s.n = 40, s.k = kk, s.accumulate = acc;
            BOOST_TEST_CONTEXT("threads " << threads) { compare<T>(s, seed += 3); }
          }
    });
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gemm_kernel)

BOOST_AUTO_TEST_CASE(transposed_a_packing_f32) { test_transposed_a_packing<float>(); }
BOOST_AUTO_TEST_CASE(transposed_a_packing_f64) { test_transposed_a_packing<double>(); }

BOOST_AUTO_TEST_CASE(bias_rows_f32) { test_bias_rows<float>(); }
BOOST_AUTO_TEST_CASE(bias_rows_f64) { test_bias_rows<double>(); }
BOOST_AUTO_TEST_CASE(epilogue_f32) { test_epilogue<float>(); }
BOOST_AUTO_TEST_CASE(epilogue_f64) { test_epilogue<double>(); }

// C ending exactly at a page boundary with no access allowed to the next page: edge tiles must
// not touch the lanes past C's last element (a masked-off lane that faults would crash here).
BOOST_AUTO_TEST_CASE(c_at_the_end_of_a_page) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  BOOST_REQUIRE(mem != MAP_FAILED);
  BOOST_REQUIRE(mprotect(static_cast<char*>(mem) + page, page, PROT_NONE) == 0);
  for_each_target([&] {
    for (bool acc : {false, true}) {
      k::GemmShape s;
      s.m = 13, s.n = 37, s.k = 40, s.accumulate = acc;  // edge tiles in both directions
      const auto a = random_vec<float>(s.m * s.k, 1), b = random_vec<float>(s.k * s.n, 2);
      float* c = reinterpret_cast<float*>(static_cast<char*>(mem) + page) - s.m * s.n;
      std::vector<float> want(static_cast<size_t>(s.m * s.n), 0.5f);
      std::fill(c, c + s.m * s.n, 0.5f);
      k::gemm(s, a.data(), b.data(), c);
      k::ref::gemm(s, a.data(), b.data(), want.data());
      check_close(std::vector<float>(c, c + s.m * s.n), want, s.m * s.n, 0, tolerance<float>(s.k));
    }
  });
  munmap(mem, 2 * page);
}

BOOST_AUTO_TEST_CASE(sizes_and_transposes_f32) { test_all_sizes_and_transposes<float>(); }
BOOST_AUTO_TEST_CASE(sizes_and_transposes_f64) { test_all_sizes_and_transposes<double>(); }
BOOST_AUTO_TEST_CASE(few_rows_times_b_transposed_f32) { test_few_rows_times_b_transposed<float>(); }
BOOST_AUTO_TEST_CASE(few_rows_times_b_transposed_f64) { test_few_rows_times_b_transposed<double>(); }
BOOST_AUTO_TEST_CASE(small_k_f32) { test_small_k<float>(); }
BOOST_AUTO_TEST_CASE(small_k_f64) { test_small_k<double>(); }
BOOST_AUTO_TEST_CASE(batches_and_accumulate_f32) { test_batches_and_accumulate<float>(); }
BOOST_AUTO_TEST_CASE(batches_and_accumulate_f64) { test_batches_and_accumulate<double>(); }
BOOST_AUTO_TEST_CASE(edge_row_tiles_bitwise_f32) { test_edge_row_tiles_bitwise<float>(); }
BOOST_AUTO_TEST_CASE(edge_row_tiles_bitwise_f64) { test_edge_row_tiles_bitwise<double>(); }
BOOST_AUTO_TEST_CASE(blocked_row_parts_bitwise_f32) { test_blocked_row_parts_bitwise<float>(); }
BOOST_AUTO_TEST_CASE(blocked_row_parts_bitwise_f64) { test_blocked_row_parts_bitwise<double>(); }
BOOST_AUTO_TEST_CASE(packed_b_f32) { test_packed_b<float>(); }
BOOST_AUTO_TEST_CASE(packed_b_f64) { test_packed_b<double>(); }

// The reference itself, on a product worked by hand: [[1, 2], [3, 4]] [[5, 6], [7, 8]] and its
// transposed forms, so that the kernels are not only checked against a wrong reference.
BOOST_AUTO_TEST_CASE(reference_by_hand) {
  const double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  double c[4];
  k::GemmShape s;
  s.m = s.n = s.k = 2;
  k::ref::gemm(s, a, b, c);
  BOOST_TEST((std::vector<double>(c, c + 4) == std::vector<double>{19, 22, 43, 50}));
  s.trans_a = true;  // A^T B = [[1, 3], [2, 4]] [[5, 6], [7, 8]]
  k::ref::gemm(s, a, b, c);
  BOOST_TEST((std::vector<double>(c, c + 4) == std::vector<double>{26, 30, 38, 44}));
  s.trans_a = false, s.trans_b = true;  // A B^T = [[1, 2], [3, 4]] [[5, 7], [6, 8]]
  k::ref::gemm(s, a, b, c);
  BOOST_TEST((std::vector<double>(c, c + 4) == std::vector<double>{17, 23, 39, 53}));
  s.trans_b = false, s.accumulate = true;  // C += A B
  k::ref::gemm(s, a, b, c);
  BOOST_TEST((std::vector<double>(c, c + 4) == std::vector<double>{36, 45, 82, 103}));
  // Batch of 2 with stride_c 0: C = A_0 B + A_1 B, A_1 = 2 A_0 (here given as its own matrix).
  const double a2[] = {1, 2, 3, 4, 2, 4, 6, 8};
  k::GemmShape t;
  t.m = t.n = t.k = 2, t.batch = 2, t.stride_a = 4, t.stride_b = 0, t.stride_c = 0;
  k::ref::gemm(t, a2, b, c);
  BOOST_TEST((std::vector<double>(c, c + 4) == std::vector<double>{57, 66, 129, 150}));
}

BOOST_AUTO_TEST_SUITE_END()
