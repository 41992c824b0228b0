// Loop helpers shared by the optimizer kernels, per-target Highway code (included by sgd-inl.h and
// adam-inl.h); autograd/kernels/norm-inl.h has the same two (ForRow, WithFlag) for autograd's kernels.

#if defined(NORMLAB_OPTIM_KERNELS_LOOP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_OPTIM_KERNELS_LOOP_INL_H_
#undef NORMLAB_OPTIM_KERNELS_LOOP_INL_H_
#else
#define NORMLAB_OPTIM_KERNELS_LOOP_INL_H_
#endif

#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::optim::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls body(d, i) at each full vector of n elements, then body(d1, i) at each remaining element
// with a one-lane tag d1 (the same body, no masked loads, which may fault on AMD AVX2).
template <typename T, class Body>
HWY_INLINE void ForEachVector(int64_t n, const Body& body) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) body(d, i);
  const hn::CappedTag<T, 1> d1;
  for (; i < n; ++i) body(d1, i);
}

// Calls f(std::true_type) or f(std::false_type): turns a run-time flag into a compile-time one.
template <class F>
HWY_INLINE void WithFlag(bool on, const F& f) {
  if (on) f(std::true_type());
  else f(std::false_type());
}

}  // namespace normlab::optim::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
