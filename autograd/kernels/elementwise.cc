// Elementwise kernels: compiled once per Highway target, dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/elementwise-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
void BinaryF32(BinaryOp op, const BroadcastPlan& p, const float* a, const float* b, float* o) { Binary(op, p, a, b, o); }
void BinaryF64(BinaryOp op, const BroadcastPlan& p, const double* a, const double* b, double* o) { Binary(op, p, a, b, o); }
void UnaryF32(UnaryOp op, int64_t n, const float* x, float* y, double p) { Unary(op, n, x, y, p); }
void UnaryF64(UnaryOp op, int64_t n, const double* x, double* y, double p) { Unary(op, n, x, y, p); }
void UnaryGradF32(UnaryGradOp op, int64_t n, const float* v, const float* g, float* dx, double p) { UnaryGrad(op, n, v, g, dx, p); }
void UnaryGradF64(UnaryGradOp op, int64_t n, const double* v, const double* g, double* dx, double p) { UnaryGrad(op, n, v, g, dx, p); }
void AxpyF32(int64_t n, double alpha, const float* x, float* y) { Axpy(n, alpha, x, y); }
void AxpyF64(int64_t n, double alpha, const double* x, double* y) { Axpy(n, alpha, x, y); }
int64_t TargetId() { return HWY_TARGET; }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(UnaryGradF32);
HWY_EXPORT(UnaryGradF64);
HWY_EXPORT(AxpyF32);
HWY_EXPORT(AxpyF64);
HWY_EXPORT(TargetId);

void binary(BinaryOp op, const BroadcastPlan& p, const float* a, const float* b, float* out) {
  HWY_DYNAMIC_DISPATCH(BinaryF32)(op, p, a, b, out);
}
void binary(BinaryOp op, const BroadcastPlan& p, const double* a, const double* b, double* out) {
  HWY_DYNAMIC_DISPATCH(BinaryF64)(op, p, a, b, out);
}
void unary(UnaryOp op, int64_t n, const float* x, float* y, double p) { HWY_DYNAMIC_DISPATCH(UnaryF32)(op, n, x, y, p); }
void unary(UnaryOp op, int64_t n, const double* x, double* y, double p) { HWY_DYNAMIC_DISPATCH(UnaryF64)(op, n, x, y, p); }
void unary_grad(UnaryGradOp op, int64_t n, const float* v, const float* g, float* dx, double p) {
  HWY_DYNAMIC_DISPATCH(UnaryGradF32)(op, n, v, g, dx, p);
}
void unary_grad(UnaryGradOp op, int64_t n, const double* v, const double* g, double* dx, double p) {
  HWY_DYNAMIC_DISPATCH(UnaryGradF64)(op, n, v, g, dx, p);
}
void axpy(int64_t n, double alpha, const float* x, float* y) { HWY_DYNAMIC_DISPATCH(AxpyF32)(n, alpha, x, y); }
void axpy(int64_t n, double alpha, const double* x, double* y) { HWY_DYNAMIC_DISPATCH(AxpyF64)(n, alpha, x, y); }
const char* active_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetId)()); }

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
