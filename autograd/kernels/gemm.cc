// Matrix-multiply kernel: compiled once per Highway target, dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/gemm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/gemm-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
void GemmF32(const GemmShape& s, const float* a, const float* b, float* c) { Gemm(s, a, b, c); }
void GemmF64(const GemmShape& s, const double* a, const double* b, double* c) { Gemm(s, a, b, c); }
int64_t PackedBSizeF32(const GemmShape& s) { return PackedBSize<float>(s); }
int64_t PackedBSizeF64(const GemmShape& s) { return PackedBSize<double>(s); }
void PackBF32(const GemmShape& s, const float* b, float* packed) { PackWholeB(s, b, packed); }
void PackBF64(const GemmShape& s, const double* b, double* packed) { PackWholeB(s, b, packed); }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {
HWY_EXPORT(GemmF32);
HWY_EXPORT(GemmF64);
HWY_EXPORT(PackedBSizeF32);
HWY_EXPORT(PackedBSizeF64);
HWY_EXPORT(PackBF32);
HWY_EXPORT(PackBF64);
void gemm(const GemmShape& s, const float* a, const float* b, float* c) { HWY_DYNAMIC_DISPATCH(GemmF32)(s, a, b, c); }
void gemm(const GemmShape& s, const double* a, const double* b, double* c) { HWY_DYNAMIC_DISPATCH(GemmF64)(s, a, b, c); }
int64_t gemm_packed_b_size(const GemmShape& s, const float*) { return HWY_DYNAMIC_DISPATCH(PackedBSizeF32)(s); }
int64_t gemm_packed_b_size(const GemmShape& s, const double*) { return HWY_DYNAMIC_DISPATCH(PackedBSizeF64)(s); }
void gemm_pack_b(const GemmShape& s, const float* b, float* packed) { HWY_DYNAMIC_DISPATCH(PackBF32)(s, b, packed); }
void gemm_pack_b(const GemmShape& s, const double* b, double* packed) { HWY_DYNAMIC_DISPATCH(PackBF64)(s, b, packed); }
}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
