// Reduction kernels (public header, no SIMD types): sum or max over the middle dim of a contiguous
// (outer, r, inner) view. Any list of dims reduces as a sequence of such calls. Highway bodies in
// reduce-inl.h, dispatch in reduce.cc, scalar references below. The order of every sum is fixed
// by the target alone (never by threads), so results repeat exactly.
#pragma once
#include <cstdint>
#include <limits>

namespace normlab::autograd::kernels {

enum class ReduceOp : int { Sum, Max };

// out[o, k] = op over j < r of x[o, j, k]; x is (outer, r, inner), out is (outer, inner). r >= 1
// for Max (an empty max has no value); an empty sum is 0.
void reduce(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const float* x, float* out);
void reduce(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const double* x, double* out);

namespace ref {
template <typename T>
void reduce(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const T* x, T* out) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      T acc = op == ReduceOp::Sum ? T(0) : -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < r; ++j) {
        const T v = x[(o * r + j) * inner + k];
        acc = op == ReduceOp::Sum ? acc + v : (v > acc || v != v ? v : acc);
      }
      out[o * inner + k] = acc;
    }
}
}  // namespace ref
}  // namespace normlab::autograd::kernels
