// SGD update kernel: compiled once per Highway target, dispatched at run time (once per parameter).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optim/kernels/sgd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "optim/kernels/sgd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::optim::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
void SgdStepF32(const SGDStep& s, int64_t n, float* theta, const float* grad, float* buf) { SgdStep(s, n, theta, grad, buf); }
void SgdStepF64(const SGDStep& s, int64_t n, double* theta, const double* grad, double* buf) { SgdStep(s, n, theta, grad, buf); }
int64_t TargetId() { return HWY_TARGET; }
}  // namespace normlab::optim::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::optim::kernels {

HWY_EXPORT(SgdStepF32);
HWY_EXPORT(SgdStepF64);
HWY_EXPORT(TargetId);

void sgd_step(const SGDStep& s, int64_t n, float* theta, const float* grad, float* buf) {
  HWY_DYNAMIC_DISPATCH(SgdStepF32)(s, n, theta, grad, buf);
}
void sgd_step(const SGDStep& s, int64_t n, double* theta, const double* grad, double* buf) {
  HWY_DYNAMIC_DISPATCH(SgdStepF64)(s, n, theta, grad, buf);
}
const char* active_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetId)()); }

}  // namespace normlab::optim::kernels
#endif  // HWY_ONCE
