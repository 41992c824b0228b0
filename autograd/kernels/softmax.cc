// Softmax row kernels: compiled once per Highway target, dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/softmax-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
double CrossEntropyForwardF32(int64_t rows, int64_t c, const float* x, const int64_t* t, float* p) {
  return CrossEntropyForward(rows, c, x, t, p);
}
double CrossEntropyForwardF64(int64_t rows, int64_t c, const double* x, const int64_t* t, double* p) {
  return CrossEntropyForward(rows, c, x, t, p);
}
void CrossEntropyBackwardF32(int64_t rows, int64_t c, const float* p, const int64_t* t, double scale, float* dx) {
  CrossEntropyBackward(rows, c, p, t, scale, dx);
}
void CrossEntropyBackwardF64(int64_t rows, int64_t c, const double* p, const int64_t* t, double scale, double* dx) {
  CrossEntropyBackward(rows, c, p, t, scale, dx);
}
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(CrossEntropyForwardF32);
HWY_EXPORT(CrossEntropyForwardF64);
HWY_EXPORT(CrossEntropyBackwardF32);
HWY_EXPORT(CrossEntropyBackwardF64);

double cross_entropy_forward(int64_t rows, int64_t c, const float* x, const int64_t* target, float* p) {
  return HWY_DYNAMIC_DISPATCH(CrossEntropyForwardF32)(rows, c, x, target, p);
}
double cross_entropy_forward(int64_t rows, int64_t c, const double* x, const int64_t* target, double* p) {
  return HWY_DYNAMIC_DISPATCH(CrossEntropyForwardF64)(rows, c, x, target, p);
}
void cross_entropy_backward(int64_t rows, int64_t c, const float* p, const int64_t* target, double scale, float* dx) {
  HWY_DYNAMIC_DISPATCH(CrossEntropyBackwardF32)(rows, c, p, target, scale, dx);
}
void cross_entropy_backward(int64_t rows, int64_t c, const double* p, const int64_t* target, double scale,
                            double* dx) {
  HWY_DYNAMIC_DISPATCH(CrossEntropyBackwardF64)(rows, c, p, target, scale, dx);
}

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
