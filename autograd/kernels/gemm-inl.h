// Matrix-multiply kernel, per-target Highway bodies (included once per target by gemm.cc).

#if defined(NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_
#endif

#include "autograd/kernels/gemm.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// c[j] += alpha * b[j] for j < n.
template <typename T>
HWY_INLINE void AxpyRow(int64_t n, T alpha, const T* HWY_RESTRICT b, T* HWY_RESTRICT c) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, alpha);
  int64_t j = 0;
  for (; j + N <= n; j += N) hn::StoreU(hn::MulAdd(va, hn::LoadU(d, b + j), hn::LoadU(d, c + j)), d, c + j);
  for (; j < n; ++j) c[j] += alpha * b[j];
}

// sum_p x[p] y[p], in a fixed order (lanes then tail).
template <typename T>
HWY_INLINE T Dot(int64_t k, const T* HWY_RESTRICT x, const T* HWY_RESTRICT y) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  int64_t p = 0;
  for (; p + 2 * N <= k; p += 2 * N) {
    a0 = hn::MulAdd(hn::LoadU(d, x + p), hn::LoadU(d, y + p), a0);
    a1 = hn::MulAdd(hn::LoadU(d, x + p + N), hn::LoadU(d, y + p + N), a1);
  }
  for (; p + N <= k; p += N) a0 = hn::MulAdd(hn::LoadU(d, x + p), hn::LoadU(d, y + p), a0);
  HWY_ALIGN T lanes[hn::MaxLanes(d)];
  hn::Store(hn::Add(a0, a1), d, lanes);
  T acc = 0;
  for (int64_t l = 0; l < N; ++l) acc += lanes[l];
  for (; p < k; ++p) acc += x[p] * y[p];
  return acc;
}

template <typename T>
void Gemm(const GemmShape& s, const T* a, const T* b, T* c) {
  for (int64_t q = 0; q < s.batch; ++q) {
    const T* A = a + q * s.stride_a;
    const T* B = b + q * s.stride_b;
    T* C = c + q * s.stride_c;
    const bool acc = s.accumulate || (s.stride_c == 0 && q > 0);
    for (int64_t i = 0; i < s.m; ++i) {
      T* crow = C + i * s.n;
      if (!s.trans_b) {
        // C[i, :] += A(i, p) B[p, :]: SIMD along the row of B
        if (!acc) for (int64_t j = 0; j < s.n; ++j) crow[j] = 0;
        for (int64_t p = 0; p < s.k; ++p)
          AxpyRow(s.n, s.trans_a ? A[p * s.m + i] : A[i * s.k + p], B + p * s.n, crow);
      } else if (!s.trans_a) {
        // C[i, j] = A[i, :] . B[j, :]: SIMD dot products along K
        for (int64_t j = 0; j < s.n; ++j) {
          const T v = Dot(s.k, A + i * s.k, B + j * s.k);
          crow[j] = acc ? crow[j] + v : v;
        }
      } else {
        for (int64_t j = 0; j < s.n; ++j) {
          T v = 0;
          for (int64_t p = 0; p < s.k; ++p) v += A[p * s.m + i] * B[j * s.k + p];
          crow[j] = acc ? crow[j] + v : v;
        }
      }
    }
  }
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
