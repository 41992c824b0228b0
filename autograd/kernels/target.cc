// The Highway target autograd's kernels dispatch to: a function compiled once per target (as every
// kernel is) that returns its target, called through the same dynamic dispatch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/target.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
int64_t TargetId() { return HWY_TARGET; }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "autograd/kernels/target.h"

namespace normlab::autograd::kernels {

HWY_EXPORT(TargetId);

const char* active_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetId)()); }

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
