// Scaled dot-product attention kernels (public header, no SIMD types): the fused forward, which
// keeps each query row's log-sum-exp, and the backward, which recomputes the probabilities from it.
// Highway bodies in attention-inl.h, dispatch in attention.cc; the scalar references in namespace
// ref below define what every SIMD target must compute.
//
// For one (batch b, head h), with q, k, v, o of shape (T, D) and s = 1/sqrt(D):
//   S_ij = s q_i . k_j                       for j in J(i) = [0, T), or [0, i] when causal
//   m_i = max_j S_ij,  l_i = sum_j e^(S_ij - m_i),  P_ij = e^(S_ij - m_i) / l_i,  lse_i = m_i + log l_i
//   o_i = sum_j P_ij v_j
// Backward, from dO and the saved o and lse (P_ij = e^(S_ij - lse_i) recomputed, flash-attention style):
//   dV = P^T dO,  dP = dO V^T,  delta_i = dO_i . o_i (= sum_j P_ij dP_ij),
//   dS = P (dP - delta),  dQ = s dS K,  dK = s dS^T Q.
// Each (b, h) works on its own scratch, allocated once per (b, h): K^T (D, T) (and V^T for the
// backward's dP), so that scores are computed along the keys, with register tiles of 4 query rows
// by 1-2 vectors of keys. The forward keeps the scores of 4 rows at a time; the backward keeps P and
// dS for a chunk of query rows (all T rows when short, else as many as fit in about 256 KB), adds
// each chunk's terms to dK and dV, and so never holds a whole (T, T) matrix for a long sequence.
//
// Layout: element (b, h, t, d) of q is q[b * q.batch + h * q.head + t * q.row + d] (the same for k,
// v, o), so the kernels read (B, H, T, D) tensors and the packed (B, T, 3C) output of a qkv
// projection alike (row = 3C, head = D, k and v at offsets C and 2C; o then (B, T, C)). dq, dk, dv
// have the layouts of q, k, v, and dout that of o; lse is contiguous (B, H, T). Outputs are
// overwritten and must not alias inputs; dq, dk, dv may share one buffer when their elements are
// disjoint (the packed case). Pairs (b, h) run in parallel on autograd's pool; each writes only its
// own elements and computes them in a fixed order, so results do not depend on the thread count.
// Scores and the sums over keys j (and over queries i for dK, dV) add their terms in the
// reference's order (d = 0 first, j = 0 first); dK is scaled once at the end where the reference
// scales each term, and delta_i, the softmax's sum l_i and multiply-add fusion depend on the
// Highway target.
// Inputs are assumed finite (a NaN or inf score makes that row's outputs NaN or meaningless).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace normlab::autograd::kernels {

// Strides of one operand, in elements.
struct AttentionLayout {
  int64_t batch = 0, head = 0, row = 0;
};

struct AttentionShape {
  int64_t B = 0, H = 0, T = 0, D = 0;
  bool causal = false;
  AttentionLayout q, k, v, o;
};

// o (layout s.o) and lse (B, H, T) from q, k, v. With p (B, H, T, T), also the probabilities P_ij
// of each row, for the keys j the row sees (causal: j <= i); of the row's other entries some are
// written 0 and the rest are left as they were.
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* o,
                       float* lse, float* p = nullptr);
void attention_forward(const AttentionShape& s, const double* q, const double* k, const double* v, double* o,
                       double* lse, double* p = nullptr);
// dq, dk, dv from dout (layout s.o), with the forward's o and lse; with the forward's p, P is read
// from it instead of being computed again from q k^T and lse (the backward's costliest product).
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* o,
                        const float* dout, const float* lse, float* dq, float* dk, float* dv,
                        const float* p = nullptr);
void attention_backward(const AttentionShape& s, const double* q, const double* k, const double* v,
                        const double* o, const double* dout, const double* lse, double* dq, double* dk, double* dv,
                        const double* p = nullptr);

// ---- Scalar references: what the Highway kernels must compute ------------------------------------
// The same operations in the same order of loops, with sums from d = 0 and j = 0 up (the SIMD
// targets add delta_i and l_i within lanes first, and may fuse multiply-adds) and std::exp, std::log.
namespace ref {

template <typename T>
T attention_dot(int64_t D, const T* a, const T* b) {
  T acc = 0;
  for (int64_t d = 0; d < D; ++d) acc += a[d] * b[d];
  return acc;
}

template <typename T>
void attention_forward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o, T* lse) {
  const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(s.D)));
  std::vector<T> row(static_cast<size_t>(s.T));
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h) {
      const T* qh = q + b * s.q.batch + h * s.q.head;
      const T* kh = k + b * s.k.batch + h * s.k.head;
      const T* vh = v + b * s.v.batch + h * s.v.head;
      T* oh = o + b * s.o.batch + h * s.o.head;
      T* lh = lse + (b * s.H + h) * s.T;
      for (int64_t i = 0; i < s.T; ++i) {
        const int64_t n = s.causal ? i + 1 : s.T;
        T m = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          row[j] = attention_dot(s.D, qh + i * s.q.row, kh + j * s.k.row) * scale;
          m = std::max(m, row[j]);
        }
        T l = 0;
        for (int64_t j = 0; j < n; ++j) {
          row[j] = std::exp(row[j] - m);
          l += row[j];
        }
        T* oi = oh + i * s.o.row;
        std::fill(oi, oi + s.D, T(0));
        for (int64_t j = 0; j < n; ++j)
          for (int64_t d = 0; d < s.D; ++d) oi[d] += row[j] * vh[j * s.v.row + d];
        const T inv_l = 1 / l;
        for (int64_t d = 0; d < s.D; ++d) oi[d] *= inv_l;
        lh[i] = m + std::log(l);
      }
    }
}

template <typename T>
void attention_backward(const AttentionShape& s, const T* q, const T* k, const T* v, const T* o, const T* dout,
                        const T* lse, T* dq, T* dk, T* dv) {
  const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(s.D)));
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h) {
      const T* qh = q + b * s.q.batch + h * s.q.head;
      const T* kh = k + b * s.k.batch + h * s.k.head;
      const T* vh = v + b * s.v.batch + h * s.v.head;
      const T* oh = o + b * s.o.batch + h * s.o.head;
      const T* gh = dout + b * s.o.batch + h * s.o.head;
      const T* lh = lse + (b * s.H + h) * s.T;
      T* dqh = dq + b * s.q.batch + h * s.q.head;
      T* dkh = dk + b * s.k.batch + h * s.k.head;
      T* dvh = dv + b * s.v.batch + h * s.v.head;
      for (int64_t j = 0; j < s.T; ++j) {
        std::fill(dkh + j * s.k.row, dkh + j * s.k.row + s.D, T(0));
        std::fill(dvh + j * s.v.row, dvh + j * s.v.row + s.D, T(0));
      }
      for (int64_t i = 0; i < s.T; ++i) {
        const int64_t n = s.causal ? i + 1 : s.T;
        const T* qi = qh + i * s.q.row;
        const T* gi = gh + i * s.o.row;
        T* dqi = dqh + i * s.q.row;
        std::fill(dqi, dqi + s.D, T(0));
        const T delta = attention_dot(s.D, gi, oh + i * s.o.row);
        for (int64_t j = 0; j < n; ++j) {
          const T* kj = kh + j * s.k.row;
          const T* vj = vh + j * s.v.row;
          const T p = std::exp(attention_dot(s.D, qi, kj) * scale - lh[i]);
          const T ds = p * (attention_dot(s.D, gi, vj) - delta);
          const T ds_scaled = ds * scale;
          T* dvj = dvh + j * s.v.row;
          T* dkj = dkh + j * s.k.row;
          for (int64_t d = 0; d < s.D; ++d) {
            dvj[d] += p * gi[d];
            dqi[d] += ds * kj[d];
            dkj[d] += ds_scaled * qi[d];
          }
        }
        for (int64_t d = 0; d < s.D; ++d) dqi[d] *= scale;
      }
    }
}

}  // namespace ref
}  // namespace normlab::autograd::kernels
