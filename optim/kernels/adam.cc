// Adam / AdamW update kernel: compiled once per Highway target, dispatched at run time (once per parameter).

// Every product is rounded before the sum that follows it, as in ref::adam_step, so that each target
// computes the same bits: GCC would otherwise contract a Mul feeding an Add into one FMA on the
// targets that have FMA (-ffp-contract=fast is its default for C++). Clang contracts only within
// one source expression, which never spans two Highway ops.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optim/kernels/adam.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "optim/kernels/adam-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::optim::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
void AdamStepF32(const AdamStep& s, const AdamFactors& f, int64_t n, float* param, const float* grad,
                 float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq) {
  AdamStepT(s, f, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}
void AdamStepF64(const AdamStep& s, const AdamFactors& f, int64_t n, double* param, const double* grad,
                 double* exp_avg, double* exp_avg_sq, double* max_exp_avg_sq) {
  AdamStepT(s, f, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}
int64_t AdamTargetId() { return HWY_TARGET; }
}  // namespace normlab::optim::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::optim::kernels {

HWY_EXPORT(AdamStepF32);
HWY_EXPORT(AdamStepF64);
HWY_EXPORT(AdamTargetId);

// The per-step factors are computed here, in code compiled for the baseline ISA (as the scalar
// reference is), not in the targets' code, where a compiler may fuse 1 - lr * weight_decay.

void adam_step(const AdamStep& s, int64_t n, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
               float* max_exp_avg_sq) {
  HWY_DYNAMIC_DISPATCH(AdamStepF32)(s, adam_factors(s), n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}
void adam_step(const AdamStep& s, int64_t n, double* param, const double* grad, double* exp_avg,
               double* exp_avg_sq, double* max_exp_avg_sq) {
  HWY_DYNAMIC_DISPATCH(AdamStepF64)(s, adam_factors(s), n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}
const char* adam_active_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(AdamTargetId)()); }

}  // namespace normlab::optim::kernels
#endif  // HWY_ONCE
