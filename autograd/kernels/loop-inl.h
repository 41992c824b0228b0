// Loop helpers for per-target Highway kernel bodies: a row of n elements as full vectors and a
// one-lane tail, a run-time flag made a compile-time one, and the sum of a vector's lanes.
//
// A public header: the one per-target (-inl.h) header of autograd/kernels/ that kernels outside
// autograd (optim/kernels/) may include, as the layering test's list of public kernels/ headers
// says. It stays in autograd, not base/, because it is Highway code and base/ does not depend on
// Highway. Include it from a kernel's -inl.h (its guard toggles with HWY_TARGET_TOGGLE, so
// foreach_target.h compiles it once per target) and name its helpers through
// normlab::autograd::kernels::HWY_NAMESPACE, e.g. `using autograd::kernels::HWY_NAMESPACE::ForRow;`.
// A change here changes optim's kernels too.

#if defined(NORMLAB_AUTOGRAD_KERNELS_LOOP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_LOOP_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_LOOP_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_LOOP_INL_H_
#endif

#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls body(d, i) at each full vector of a row of n elements, then body(d1, i) at each remaining
// element with a one-lane tag d1 (the same body, no masked loads, which may fault on AMD AVX2).
template <typename T, class Body>
HWY_INLINE void ForRow(int64_t n, const Body& body) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) body(d, i);
  const hn::CappedTag<T, 1> d1;
  for (; i < n; ++i) body(d1, i);
}

// Whether masked loads and stores never touch their masked-off lanes, so that a vector may be
// masked at the end of an array: AVX-512's mask registers suppress faults there; AVX2's vmaskmov
// may fault on AMD (its manual leaves masked-off elements to the implementation), and the other
// targets emulate masking with full-width accesses.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr bool kMaskedAccessIsSafe = true;
#else
constexpr bool kMaskedAccessIsSafe = false;
#endif

// The sum of v's lanes, added as a tree in registers (SumOfLanes: a fixed order per target, so a
// row's sum never depends on the thread count or on which rows share a part; log2(lanes) shuffles
// and adds instead of a store and a chain of lanes - 1 dependent scalar adds).
template <class D, class V>
HWY_INLINE hn::TFromD<D> LaneSum(D d, V v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// Turns a runtime flag into a compile-time one: f(std::true_type{}) or f(std::false_type{}).
template <class F>
HWY_INLINE void WithFlag(bool flag, const F& f) {
  if (flag) f(std::true_type{});
  else f(std::false_type{});
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
