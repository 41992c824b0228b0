// Pooling kernels (public header, no SIMD types): the 2x2 window with stride 2 and no padding (max
// and average, forward and backward), the pooling of nearly every CNN, and the global average
// (adaptive_avg_pool2d to 1x1), over whole planes. Highway bodies in pooling-inl.h, dispatch in
// pooling.cc; the scalar references below define what every target must compute (bit for bit,
// except the global average's sum, whose order is fixed by the target's vector width).
#pragma once
#include <algorithm>
#include <cstdint>

namespace normlab::autograd::kernels {

// For each of `planes` planes x (h, w) -> y (h/2, w/2) (rounded down): y[i, j] = the largest of
// x[2i, 2j], x[2i, 2j+1], x[2i+1, 2j], x[2i+1, 2j+1], scanned in that order as PyTorch's CPU kernel
// does: a value replaces the running maximum (from -inf) when it is greater or NaN, so a tie goes
// to the first and a NaN wins (the last NaN); idx[i, j] = its position in the plane (row * w + col;
// the first position when all four are -inf). h, w >= 2.
void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y, int32_t* idx);
void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const double* x, double* y, int32_t* idx);

// The backward of max_pool_2x2: dx (h, w) = 0, then dx[idx[i, j]] += dy[i, j]. The windows do not
// overlap, so every element of dx is written once: 0 + dy at the argmax (a -0 gradient becomes +0,
// as the sum does), +0 elsewhere, and +0 in the last row and column when h or w is odd. idx holds
// positions of the 2x2 windows (as max_pool_2x2 writes them).
void max_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const float* dy, const int32_t* idx, float* dx);
void max_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const double* dy, const int32_t* idx, double* dx);

// y[i, j] = (((0 + x[2i, 2j]) + x[2i, 2j+1]) + x[2i+1, 2j]) + x[2i+1, 2j+1]) / 4, summed in that
// order (avg_pool2d's window scan). h, w >= 2.
void avg_pool_2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y);
void avg_pool_2x2(int64_t planes, int64_t h, int64_t w, const double* x, double* y);

// The backward of avg_pool_2x2: dx = 0 + dy[i, j] / 4 on the four positions of window (i, j), +0
// in the last row and column when h or w is odd.
void avg_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const float* dy, float* dx);
void avg_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const double* dy, double* dx);

// Global average: y[q] = (sum of the plane's n values) / n for each of `planes` contiguous planes
// of n >= 1 values. The reference sums in order; a target sums in its vector's lanes and then
// across them (a fixed order for each target, never dependent on threads).
void global_avg_pool(int64_t planes, int64_t n, const float* x, float* y);
void global_avg_pool(int64_t planes, int64_t n, const double* x, double* y);

// The backward of global_avg_pool: dx[q, :] = 0 + dy[q] / n.
void global_avg_pool_backward(int64_t planes, int64_t n, const float* dy, float* dx);
void global_avg_pool_backward(int64_t planes, int64_t n, const double* dy, double* dx);

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

template <typename T>
void max_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const T* dy, const int32_t* idx, T* dx) {
  const int64_t oh = h / 2, ow = w / 2;
  for (int64_t q = 0; q < planes; ++q) {
    T* g = dx + q * h * w;
    std::fill(g, g + h * w, T(0));
    for (int64_t i = 0; i < oh * ow; ++i) g[idx[q * oh * ow + i]] += dy[q * oh * ow + i];
  }
}

template <typename T>
void avg_pool_2x2(int64_t planes, int64_t h, int64_t w, const T* x, T* y) {
  const int64_t oh = h / 2, ow = w / 2;
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const T* r0 = x + q * h * w + 2 * i * w + 2 * j;
        T sum = 0;
        sum += r0[0], sum += r0[1], sum += r0[w], sum += r0[w + 1];
        y[(q * oh + i) * ow + j] = sum / T(4);
      }
}

template <typename T>
void avg_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const T* dy, T* dx) {
  const int64_t oh = h / 2, ow = w / 2;
  for (int64_t q = 0; q < planes; ++q) {
    T* g = dx + q * h * w;
    std::fill(g, g + h * w, T(0));
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const T share = dy[(q * oh + i) * ow + j] / T(4);
        T* r0 = g + 2 * i * w + 2 * j;
        r0[0] += share, r0[1] += share, r0[w] += share, r0[w + 1] += share;
      }
  }
}

template <typename T>
void global_avg_pool(int64_t planes, int64_t n, const T* x, T* y) {
  for (int64_t q = 0; q < planes; ++q) {
    T sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += x[q * n + i];
    y[q] = sum / static_cast<T>(n);
  }
}

template <typename T>
void global_avg_pool_backward(int64_t planes, int64_t n, const T* dy, T* dx) {
  for (int64_t q = 0; q < planes; ++q) std::fill(dx + q * n, dx + (q + 1) * n, T(0) + dy[q] / static_cast<T>(n));
}
}  // namespace ref
}  // namespace normlab::autograd::kernels
