// Max-pooling kernel: compiled once per Highway target, dispatched at run time. Float only in SIMD
// (the training dtype); float64 (gradient checks) runs the scalar reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/max_pool.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/max_pool-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// A non-template wrapper: Highway exports functions, not templates.
void MaxPool2x2F32(int64_t planes, int64_t h, int64_t w, const float* x, float* y, int32_t* idx) {
  MaxPool2x2(planes, h, w, x, y, idx);
}
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(MaxPool2x2F32);

void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y, int32_t* idx) {
  HWY_DYNAMIC_DISPATCH(MaxPool2x2F32)(planes, h, w, x, y, idx);
}
void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const double* x, double* y, int32_t* idx) {
  ref::max_pool_2x2(planes, h, w, x, y, idx);
}

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
