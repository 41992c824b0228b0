// Matrix-multiply kernel (public header, no SIMD types): C = op(A) op(B) [+ C], batched.
// The Highway body (gemm-inl.h) is a packed, cache-blocked, register-tiled GEMM that runs on
// up to autograd::num_threads() threads (fewer when small: autograd/grain.h); its results do not depend on the thread count.
#pragma once
#include <cstdint>

namespace normlab::autograd::kernels {

// For b < batch: C_b (M, N) = op(A_b) op(B_b) (+ C_b if accumulate), where op(A) is A (M, K) or,
// with trans_a, A stored as (K, M) and transposed; likewise B is (K, N) or stored as (N, K).
// A_b = A + b * stride_a (elements), same for B, C; stride 0 broadcasts (with stride_c 0 and
// accumulate, the batch sums into one C, in batch order).
// With bias (n values of C's type, not with accumulate), C_b = bias (every row) + op(A_b) op(B_b):
// the bias is added where the first K block's results are stored (the blocked GEMM), or C is
// filled with it first and the product accumulated onto it (the other paths); the same values
// either way.
// Epilogue (batch 1, not with accumulate; at most one of the two): C = C * mul elementwise, or
// C = C + residual, applied to C's final values; mul and residual are (M, N) arrays of C's type
// with rows n apart. The blocked GEMM applies it to each block of C right after the block's last
// K step, while the block is in cache; the other paths make one pass after the product. The same
// values either way.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  bool accumulate = false;
  const void* bias = nullptr;
  const void* mul = nullptr;
  const void* residual = nullptr;
  // Take the blocked GEMM whatever the shape (not the dot-product, small-K or narrow paths): every
  // element of C is then the same sum, an FMA chain over K in order, for any M. For callers that
  // split C's rows between calls and need the bits of one call (autograd::lstm_recurrence).
  bool blocked = false;
  // b is op(B) already packed by gemm_pack_b for this trans_b, k and n (batch 1, or stride_b 0: one
  // B for every item): no packing in the call. Implies `blocked`, and C is never computed as C^T.
  // For a B used by many products (an LSTM's W_hh at every time step); the bits are those of the
  // same call on the unpacked B with `blocked`.
  bool packed_b = false;
};

void gemm(const GemmShape& s, const float* a, const float* b, float* c);
void gemm(const GemmShape& s, const double* a, const double* b, double* c);

// Packing op(B) (K, N) once, in the blocked GEMM's layout for the Highway target that runs: K blocks
// of N columns in micro-panels, N rounded up to a whole panel. gemm_packed_b_size gives the elements
// `packed` must hold (for s.k and s.n); `packed` must be 64-byte aligned. Only s.trans_b, s.k and
// s.n are read. The buffer is valid for gemm calls on the same target (the dispatch does not change
// within a process unless a test forces targets).
int64_t gemm_packed_b_size(const GemmShape& s, const float*);
int64_t gemm_packed_b_size(const GemmShape& s, const double*);
void gemm_pack_b(const GemmShape& s, const float* b, float* packed);
void gemm_pack_b(const GemmShape& s, const double* b, double* packed);

namespace ref {
template <typename T>
void gemm(const GemmShape& s, const T* a, const T* b, T* c) {
  for (int64_t q = 0; q < s.batch; ++q) {
    const T* A = a + q * s.stride_a;
    const T* B = b + q * s.stride_b;
    T* C = c + q * s.stride_c;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < s.k; ++p)
          acc += (s.trans_a ? A[p * s.m + i] : A[i * s.k + p]) * (s.trans_b ? B[j * s.k + p] : B[p * s.n + j]);
        const T start = s.bias ? static_cast<const T*>(s.bias)[j] : T(0);
        T out = (s.accumulate || (s.stride_c == 0 && q > 0) ? C[i * s.n + j] : start) + acc;
        if (s.mul) out = out * static_cast<const T*>(s.mul)[i * s.n + j];
        if (s.residual) out = out + static_cast<const T*>(s.residual)[i * s.n + j];
        C[i * s.n + j] = out;
      }
  }
}
}  // namespace ref
}  // namespace normlab::autograd::kernels
