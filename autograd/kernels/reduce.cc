// Reduction kernels: compiled once per Highway target, dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/reduce.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/reduce-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
void ReduceF32(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const float* x, float* out) { Reduce(op, outer, r, inner, x, out); }
void ReduceF64(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const double* x, double* out) { Reduce(op, outer, r, inner, x, out); }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {
HWY_EXPORT(ReduceF32);
HWY_EXPORT(ReduceF64);
void reduce(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const float* x, float* out) {
  HWY_DYNAMIC_DISPATCH(ReduceF32)(op, outer, r, inner, x, out);
}
void reduce(ReduceOp op, int64_t outer, int64_t r, int64_t inner, const double* x, double* out) {
  HWY_DYNAMIC_DISPATCH(ReduceF64)(op, outer, r, inner, x, out);
}
}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
