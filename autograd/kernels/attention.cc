// Scaled dot-product attention kernels: compiled once per Highway target, dispatched at run time
// (once per call).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/attention-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
#define NORMLAB_ATTENTION_WRAPPERS(T, S)                                                                      \
  void AttentionForward##S(const AttentionShape& s, const T* q, const T* k, const T* v, T* o, T* lse,      \
                           T* p) {                                                                           \
    AttentionForward(s, q, k, v, o, lse, p);                                                                 \
  }                                                                                                          \
  void AttentionBackward##S(const AttentionShape& s, const T* q, const T* k, const T* v, const T* o,         \
                            const T* dout, const T* lse, T* dq, T* dk, T* dv, const T* p) {                  \
    AttentionBackward(s, q, k, v, o, dout, lse, dq, dk, dv, p);                                              \
  }
NORMLAB_ATTENTION_WRAPPERS(float, F32)
NORMLAB_ATTENTION_WRAPPERS(double, F64)
#undef NORMLAB_ATTENTION_WRAPPERS
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(AttentionForwardF32);
HWY_EXPORT(AttentionForwardF64);
HWY_EXPORT(AttentionBackwardF32);
HWY_EXPORT(AttentionBackwardF64);

#define NORMLAB_ATTENTION_DISPATCH(T, S)                                                                      \
  void attention_forward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o, T* lse, T* p) {  \
    HWY_DYNAMIC_DISPATCH(AttentionForward##S)(s, q, k, v, o, lse, p);                                        \
  }                                                                                                          \
  void attention_backward(const AttentionShape& s, const T* q, const T* k, const T* v, const T* o,           \
                          const T* dout, const T* lse, T* dq, T* dk, T* dv, const T* p) {                    \
    HWY_DYNAMIC_DISPATCH(AttentionBackward##S)(s, q, k, v, o, dout, lse, dq, dk, dv, p);                     \
  }
NORMLAB_ATTENTION_DISPATCH(float, F32)
NORMLAB_ATTENTION_DISPATCH(double, F64)
#undef NORMLAB_ATTENTION_DISPATCH

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
