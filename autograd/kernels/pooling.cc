// Pooling kernels: compiled once per Highway target, dispatched at run time. Float only in SIMD
// (the training dtype); float64 (gradient checks) runs the scalar references.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/pooling.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/pooling-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// A non-template wrapper: Highway exports functions, not templates.
void MaxPool2x2F32(int64_t planes, int64_t h, int64_t w, const float* x, float* y, int32_t* idx) {
  MaxPool2x2(planes, h, w, x, y, idx);
}
void MaxPool2x2BackwardF32(int64_t planes, int64_t h, int64_t w, const float* dy, const int32_t* idx, float* dx) {
  MaxPool2x2Backward(planes, h, w, dy, idx, dx);
}
void AvgPool2x2F32(int64_t planes, int64_t h, int64_t w, const float* x, float* y) { AvgPool2x2(planes, h, w, x, y); }
void AvgPool2x2BackwardF32(int64_t planes, int64_t h, int64_t w, const float* dy, float* dx) {
  AvgPool2x2Backward(planes, h, w, dy, dx);
}
void GlobalAvgPoolF32(int64_t planes, int64_t n, const float* x, float* y) { GlobalAvgPool(planes, n, x, y); }
void GlobalAvgPoolBackwardF32(int64_t planes, int64_t n, const float* dy, float* dx) {
  GlobalAvgPoolBackward(planes, n, dy, dx);
}
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(MaxPool2x2F32);
HWY_EXPORT(MaxPool2x2BackwardF32);
HWY_EXPORT(AvgPool2x2F32);
HWY_EXPORT(AvgPool2x2BackwardF32);
HWY_EXPORT(GlobalAvgPoolF32);
HWY_EXPORT(GlobalAvgPoolBackwardF32);

void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y, int32_t* idx) {
  HWY_DYNAMIC_DISPATCH(MaxPool2x2F32)(planes, h, w, x, y, idx);
}
void max_pool_2x2(int64_t planes, int64_t h, int64_t w, const double* x, double* y, int32_t* idx) {
  ref::max_pool_2x2(planes, h, w, x, y, idx);
}
void max_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const float* dy, const int32_t* idx, float* dx) {
  HWY_DYNAMIC_DISPATCH(MaxPool2x2BackwardF32)(planes, h, w, dy, idx, dx);
}
void max_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const double* dy, const int32_t* idx, double* dx) {
  ref::max_pool_2x2_backward(planes, h, w, dy, idx, dx);
}
void avg_pool_2x2(int64_t planes, int64_t h, int64_t w, const float* x, float* y) {
  HWY_DYNAMIC_DISPATCH(AvgPool2x2F32)(planes, h, w, x, y);
}
void avg_pool_2x2(int64_t planes, int64_t h, int64_t w, const double* x, double* y) {
  ref::avg_pool_2x2(planes, h, w, x, y);
}
void avg_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const float* dy, float* dx) {
  HWY_DYNAMIC_DISPATCH(AvgPool2x2BackwardF32)(planes, h, w, dy, dx);
}
void avg_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, const double* dy, double* dx) {
  ref::avg_pool_2x2_backward(planes, h, w, dy, dx);
}
void global_avg_pool(int64_t planes, int64_t n, const float* x, float* y) {
  HWY_DYNAMIC_DISPATCH(GlobalAvgPoolF32)(planes, n, x, y);
}
void global_avg_pool(int64_t planes, int64_t n, const double* x, double* y) { ref::global_avg_pool(planes, n, x, y); }
void global_avg_pool_backward(int64_t planes, int64_t n, const float* dy, float* dx) {
  HWY_DYNAMIC_DISPATCH(GlobalAvgPoolBackwardF32)(planes, n, dy, dx);
}
void global_avg_pool_backward(int64_t planes, int64_t n, const double* dy, double* dx) {
  ref::global_avg_pool_backward(planes, n, dy, dx);
}

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
