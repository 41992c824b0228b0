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
#include "autograd/grain.h"
#include "base/thread_pool.h"

namespace normlab::optim::kernels {

HWY_EXPORT(SgdStepF32);
HWY_EXPORT(SgdStepF64);
HWY_EXPORT(TargetId);

namespace {

// A parameter of at least two grains of elements (autograd/grain.h) is updated in parts on the
// thread pool when a worker is awake. The update streams three arrays and does little with them: a
// second core pays because the pool gives each core the same half of the parameter, and of its
// momentum, at every step (the caller claims parts from the front, the workers from the back), so
// each half stays in its core's cache from step to step; with every worker asleep the wake-up would
// cost more than the split saves, so the update then stays on the caller. Each element's update is
// independent: the result never depends on the split.
// step(b, e) over [0, n): one call when small or no worker is awake, else 8 parts per thread (a
// worker that joins late holds the caller up by one small part at most).
template <class Step>
void in_parts(int64_t n, const Step& step) {
  const int threads = autograd::threads_for(static_cast<double>(n), autograd::grains().optimizer);
  base::parallel_blocks(threads > 1 && base::spinning_workers() > 0 ? threads : 1, n, 8, step);
}

}  // namespace

void sgd_step(const SGDStep& s, int64_t n, float* theta, const float* grad, float* buf) {
  in_parts(n, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(SgdStepF32)(s, e - b, theta + b, grad + b, buf ? buf + b : nullptr);
  });
}
void sgd_step(const SGDStep& s, int64_t n, double* theta, const double* grad, double* buf) {
  in_parts(n, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(SgdStepF64)(s, e - b, theta + b, grad + b, buf ? buf + b : nullptr);
  });
}
const char* active_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetId)()); }

}  // namespace normlab::optim::kernels
#endif  // HWY_ONCE
