// Max-pooling kernel (public header, no SIMD types): the 2x2 window with stride 2 and no padding,
// the pooling of nearly every CNN, over whole planes. Highway body in max_pool-inl.h, dispatch in
// max_pool.cc; the scalar reference below defines what every target must compute.
#pragma once
#include <cstdint>

namespace normlab::autograd::kernels {

// For each of `planes` planes x (h, w) -> y (h/2, w/2) (rounded down): y[i, j] = the largest of
// x[2i, 2j], x[2i, 2j+1], x[2i+1, 2j], x[2i+1, 2j+1], scanned in that order as PyTorch's CPU kernel
// does: a value replaces the running maximum (from -inf) when it is greater or NaN, so a tie goes
// to the first and a NaN wins (the last NaN); idx[i, j] = its position in the plane (row * w + col;
// the first position when all four are -inf). h, w >= 2.
void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y, int32_t* idx);
void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const double* x, double* y, int32_t* idx);

namespace ref {
template <typename T>
void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const T* x, T* y, int32_t* idx) {
  const int64_t oh = h / 2, ow = w / 2;
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t pos[4] = {2 * i * w + 2 * j, 2 * i * w + 2 * j + 1, (2 * i + 1) * w + 2 * j,
                                (2 * i + 1) * w + 2 * j + 1};
        const T* plane = x + q * h * w;
        T best = plane[pos[0]];  // -inf, then the first value: the same unless it is -inf
        int64_t at = pos[0];
        for (int k = 1; k < 4; ++k) {
          const T v = plane[pos[k]];
          if (v > best || v != v) best = v, at = pos[k];
        }
        y[(q * oh + i) * ow + j] = best;
        idx[(q * oh + i) * ow + j] = static_cast<int32_t>(at);
      }
}
}  // namespace ref
}  // namespace normlab::autograd::kernels
