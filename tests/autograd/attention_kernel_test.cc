// The attention kernels: the scalar reference against the textbook formula with the whole score
// matrix (in double), every Highway target against the reference (float and double, odd T and D,
// causal or not, contiguous and packed strided layouts, P computed again by the backward or kept by
// the forward), and the same bits on 1, 2 and 3 threads.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "autograd/kernels/attention.h"
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

// The operands of one test: a layout and buffers big enough for it.
struct Case {
  k::AttentionShape s;
  int64_t in_size = 0, out_size = 0;  // elements of the q/k/v buffer and of the o buffer
  int64_t k_off = 0, v_off = 0;       // where k and v start in the q/k/v buffer
};

// Contiguous (B, H, T, D) q, k, v one after the other in one buffer, and o (B, H, T, D).
Case contiguous(int64_t B, int64_t H, int64_t T, int64_t D, bool causal) {
  Case c;
  const k::AttentionLayout l{H * T * D, T * D, D};
  c.s = {B, H, T, D, causal, l, l, l, l};
  const int64_t n = B * H * T * D;
  c.in_size = 3 * n;
  c.k_off = n;
  c.v_off = 2 * n;
  c.out_size = n;
  return c;
}

// Packed as nanoGPT's qkv (B, T, 3C) with C = H D, rows padded by `pad` unused elements (which no
// kernel may read into a result or write), and o (B, T, C) with rows padded likewise.
Case packed(int64_t B, int64_t H, int64_t T, int64_t D, bool causal, int64_t pad) {
  Case c;
  const int64_t C = H * D, row = 3 * C + pad, orow = C + pad;
  const k::AttentionLayout in{T * row, D, row}, out{T * orow, D, orow};
  c.s = {B, H, T, D, causal, in, in, in, out};
  c.in_size = B * T * row;
  c.k_off = C;
  c.v_off = 2 * C;
  c.out_size = B * T * orow;
  return c;
}

template <typename T> double rtol() { return sizeof(T) == 4 ? 2e-5 : 1e-12; }
template <typename T> double atol() { return sizeof(T) == 4 ? 2e-6 : 1e-13; }

// Forward and backward of the dispatched kernels against the reference on the current target.
// The padding elements of the outputs keep their sentinel (-7).
template <typename T>
void check_case(const Case& c, unsigned seed) {
  const auto& s = c.s;
  BOOST_TEST_CONTEXT("B " << s.B << " H " << s.H << " T " << s.T << " D " << s.D << " causal " << s.causal
                          << " row " << s.q.row) {
    const auto in = random_vec<T>(c.in_size, -2, 2, seed);
    const auto dout = random_vec<T>(c.out_size, seed + 1);
    const T *q = in.data(), *kk = in.data() + c.k_off, *v = in.data() + c.v_off;
    const int64_t nl = s.B * s.H * s.T;
    std::vector<T> o(c.out_size, T(-7)), lse(nl + 1, T(-7)), want_o(c.out_size, T(-7)), want_lse(nl + 1, T(-7));
    k::attention_forward(s, q, kk, v, o.data(), lse.data());
    k::ref::attention_forward(s, q, kk, v, want_o.data(), want_lse.data());
    check_close(o, want_o, o.size(), rtol<T>(), atol<T>());  // includes the padding: -7 on both sides
    check_close(lse, want_lse, lse.size(), rtol<T>(), atol<T>());
    std::vector<T> grad(c.in_size, T(-7)), want_grad(c.in_size, T(-7));
    k::attention_backward(s, q, kk, v, want_o.data(), dout.data(), want_lse.data(), grad.data(),
                          grad.data() + c.k_off, grad.data() + c.v_off);
    k::ref::attention_backward(s, q, kk, v, want_o.data(), dout.data(), want_lse.data(), want_grad.data(),
                               want_grad.data() + c.k_off, want_grad.data() + c.v_off);
    check_close(grad, want_grad, grad.size(), rtol<T>(), atol<T>());
    // With P kept by the forward and read back by the backward: the same outputs and gradients.
    std::vector<T> p(static_cast<size_t>(nl * s.T) + 1, T(-7)), o2(c.out_size, T(-7)), lse2(nl + 1, T(-7));
    k::attention_forward(s, q, kk, v, o2.data(), lse2.data(), p.data());
    check_close(o2, want_o, o2.size(), rtol<T>(), atol<T>());
    check_close(lse2, want_lse, lse2.size(), rtol<T>(), atol<T>());
    BOOST_TEST(p.back() == T(-7));  // nothing past P's end
    std::vector<T> grad2(c.in_size, T(-7));
    k::attention_backward(s, q, kk, v, o2.data(), dout.data(), lse2.data(), grad2.data(), grad2.data() + c.k_off,
                          grad2.data() + c.v_off, p.data());
    check_close(grad2, want_grad, grad2.size(), rtol<T>(), atol<T>());
  }
}

template <typename T>
void check_all_cases() {
  unsigned seed = 1;
  for (bool causal : {false, true})
    for (int64_t T_ : {1, 2, 5, 9, 17})
      for (int64_t D : {1, 3, 4, 7, 9, 17, 33}) {
        check_case<T>(contiguous(2, 3, T_, D, causal), seed++);
        check_case<T>(packed(2, 3, T_, D, causal, 1), seed++);
      }
  // Rows long enough for every block size of the kernels on every target (4, 2, 1 vectors and a
  // tail: 117 = 64 + 32 + 16 + 5 with 16 lanes) along the keys and along D.
  for (bool causal : {false, true}) {
    check_case<T>(contiguous(1, 2, 117, 117, causal), seed++);
    check_case<T>(packed(2, 1, 70, 117, causal, 3), seed++);
  }
  // nanoGPT's head size 32 over 64 tokens (whole vectors: q, k, v and the outputs read and written in
  // place; whole 8 x 8 or 4 x 4 blocks of the transposed copies of K and V), and one block more.
  for (bool causal : {false, true}) {
    check_case<T>(packed(2, 2, 64, 32, causal, 0), seed++);
    check_case<T>(contiguous(1, 2, 72, 40, causal), seed++);
  }
  // Long enough that the backward works in several chunks of query rows (about 108 rows each).
  for (bool causal : {false, true}) check_case<T>(packed(1, 1, 300, 9, causal, 2), seed++);
  check_case<T>(contiguous(1, 1, 0, 5, true), seed++);  // no tokens: nothing to do
}

// The textbook formula in double with the whole (T, T) matrix P of one (b, h), contiguous operands:
//   P = softmax(q k^T / sqrt(D) + mask), o = P v, dV = P^T dO, dP = dO V^T,
//   dS_ij = P_ij (dP_ij - sum_l P_il dP_il), dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D).
struct Naive {
  std::vector<double> o, lse, dq, dk, dv;
};

Naive naive(int64_t T, int64_t D, bool causal, const std::vector<double>& q, const std::vector<double>& kk,
            const std::vector<double>& v, const std::vector<double>& g) {
  const double sc = 1 / std::sqrt(static_cast<double>(D));
  Naive r{std::vector<double>(T * D), std::vector<double>(T), std::vector<double>(T * D),
          std::vector<double>(T * D), std::vector<double>(T * D)};
  std::vector<double> P(T * T, 0.0), dP(T * T, 0.0);
  for (int64_t i = 0; i < T; ++i) {
    double m = -INFINITY;
    for (int64_t j = 0; j < T; ++j) {
      double sij = 0;
      for (int64_t d = 0; d < D; ++d) sij += q[i * D + d] * kk[j * D + d];
      P[i * T + j] = causal && j > i ? -INFINITY : sij * sc;
      m = std::max(m, P[i * T + j]);
    }
    double l = 0;
    for (int64_t j = 0; j < T; ++j) l += std::exp(P[i * T + j] - m);
    r.lse[i] = m + std::log(l);
    for (int64_t j = 0; j < T; ++j) P[i * T + j] = std::exp(P[i * T + j] - m) / l;
  }
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      for (int64_t d = 0; d < D; ++d) {
        r.o[i * D + d] += P[i * T + j] * v[j * D + d];
        r.dv[j * D + d] += P[i * T + j] * g[i * D + d];
        dP[i * T + j] += g[i * D + d] * v[j * D + d];
      }
  for (int64_t i = 0; i < T; ++i) {
    double rs = 0;
    for (int64_t j = 0; j < T; ++j) rs += P[i * T + j] * dP[i * T + j];
    for (int64_t j = 0; j < T; ++j) {
      const double ds = P[i * T + j] * (dP[i * T + j] - rs);
      for (int64_t d = 0; d < D; ++d) {
        r.dq[i * D + d] += ds * kk[j * D + d] * sc;
        r.dk[j * D + d] += ds * q[i * D + d] * sc;
      }
    }
  }
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(attention_kernels)

BOOST_AUTO_TEST_CASE(reference_matches_the_whole_matrix_formula) {
  for (bool causal : {false, true})
    for (int64_t T : {1, 4, 7})
      for (int64_t D : {1, 5}) {
        BOOST_TEST_CONTEXT("T " << T << " D " << D << " causal " << causal) {
          const int64_t n = T * D;
          const auto q = random_vec<double>(n, -2, 2, 11), kk = random_vec<double>(n, -2, 2, 12),
                     v = random_vec<double>(n, 13), g = random_vec<double>(n, 14);
          const Naive want = naive(T, D, causal, q, kk, v, g);
          const k::AttentionLayout l{n, n, D};
          const k::AttentionShape s{1, 1, T, D, causal, l, l, l, l};
          std::vector<double> o(n), lse(T), dq(n), dk(n), dv(n);
          k::ref::attention_forward(s, q.data(), kk.data(), v.data(), o.data(), lse.data());
          k::ref::attention_backward(s, q.data(), kk.data(), v.data(), o.data(), g.data(), lse.data(), dq.data(),
                                     dk.data(), dv.data());
          check_close(o, want.o, n, 1e-13, 1e-14);
          check_close(lse, want.lse, T, 1e-13, 1e-14);
          check_close(dq, want.dq, n, 1e-12, 1e-13);
          check_close(dk, want.dk, n, 1e-12, 1e-13);
          check_close(dv, want.dv, n, 1e-12, 1e-13);
        }
      }
}

BOOST_AUTO_TEST_CASE(every_target_matches_the_reference_float) {
  for_each_target([] { check_all_cases<float>(); });
}

BOOST_AUTO_TEST_CASE(every_target_matches_the_reference_double) {
  for_each_target([] { check_all_cases<double>(); });
}

// Big enough to run on several threads (B H T^2 D >= 64K): the same bits on 1, 2 and 3 threads.
BOOST_AUTO_TEST_CASE(same_bits_on_any_thread_count) {
  using normlab::autograd::num_threads;
  using normlab::autograd::set_num_threads;
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 and 3 threads
  const Case c = packed(2, 4, 40, 13, true, 0);
  const auto in = random_vec<float>(c.in_size, -2, 2, 5);
  const auto g = random_vec<float>(c.out_size, 6);
  std::vector<float> first_o, first_grad;
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    std::vector<float> o(c.out_size), lse(c.s.B * c.s.H * c.s.T), grad(c.in_size);
    k::attention_forward(c.s, in.data(), in.data() + c.k_off, in.data() + c.v_off, o.data(), lse.data());
    k::attention_backward(c.s, in.data(), in.data() + c.k_off, in.data() + c.v_off, o.data(), g.data(), lse.data(),
                          grad.data(), grad.data() + c.k_off, grad.data() + c.v_off);
    if (t == 1) {
      first_o = o;
      first_grad = grad;
      continue;
    }
    BOOST_TEST(std::memcmp(o.data(), first_o.data(), o.size() * sizeof(float)) == 0, "o: 1 vs " << t << " threads");
    BOOST_TEST(std::memcmp(grad.data(), first_grad.data(), grad.size() * sizeof(float)) == 0,
               "grads: 1 vs " << t << " threads");
  }
}

BOOST_AUTO_TEST_SUITE_END()
