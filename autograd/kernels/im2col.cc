// col2im (see im2col.h): compiled once per Highway target, dispatched at run time. Float on the
// targets (the training dtype); float64 (gradient checks) runs the scalar reference, and im2col (a
// copy) is the reference for both.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/im2col.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/im2col-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// A non-template wrapper: Highway exports functions, not templates.
void Col2ImF32(const ConvGeometry& g, const float* col, float* img) { Col2Im(g, col, img); }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(Col2ImF32);

void im2col(const ConvGeometry& g, const float* img, float* col) { ref::im2col(g, img, col); }
void im2col(const ConvGeometry& g, const double* img, double* col) { ref::im2col(g, img, col); }
void col2im(const ConvGeometry& g, const float* col, float* img) { HWY_DYNAMIC_DISPATCH(Col2ImF32)(g, col, img); }
void col2im(const ConvGeometry& g, const double* col, double* img) { ref::col2im(g, col, img); }

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
