// Normalization kernels: compiled once per Highway target, dispatched at run time (once per call).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "autograd/kernels/norm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
#define NORMLAB_NORM_WRAPPERS(T, S)                                                                        \
  void LayerNormForward##S(int64_t rows, int64_t n, const T* x, const T* gamma, const T* beta, double eps,  \
                           T* y, T* mean, T* mean_lo, T* rstd) {                                           \
    LayerNormForward(rows, n, x, gamma, beta, eps, y, mean, mean_lo, rstd);                                \
  }                                                                                                        \
  void LayerNormBackward##S(int64_t rows, int64_t n, const T* dy, const T* x, const T* mean,                \
                            const T* mean_lo, const T* rstd, const T* gamma, T* dx, T* dgamma, T* dbeta) { \
    RowNormBackward(true, rows, n, dy, x, mean, mean_lo, rstd, gamma, dx, dgamma, dbeta);                  \
  }                                                                                                        \
  void RmsNormForward##S(int64_t rows, int64_t n, const T* x, const T* gamma, double eps, T* y, T* rstd) {  \
    RmsNormForward(rows, n, x, gamma, eps, y, rstd);                                                       \
  }                                                                                                        \
  void RmsNormBackward##S(int64_t rows, int64_t n, const T* dy, const T* x, const T* rstd, const T* gamma,  \
                          T* dx, T* dgamma) {                                                              \
    RowNormBackward<T>(false, rows, n, dy, x, nullptr, nullptr, rstd, gamma, dx, dgamma, nullptr);         \
  }                                                                                                        \
  void GroupNormForward##S(int64_t N, int64_t C, int64_t Sz, int64_t G, const T* x, const T* gamma,         \
                           const T* beta, double eps, T* y, T* mean, T* mean_lo, T* rstd) {                \
    GroupNormForward(N, C, Sz, G, x, gamma, beta, eps, y, mean, mean_lo, rstd);                            \
  }                                                                                                        \
  void GroupNormBackward##S(int64_t N, int64_t C, int64_t Sz, int64_t G, const T* dy, const T* x,           \
                            const T* mean, const T* mean_lo, const T* rstd, const T* gamma, T* dx,         \
                            T* dgamma, T* dbeta) {                                                         \
    GroupNormBackward(N, C, Sz, G, dy, x, mean, mean_lo, rstd, gamma, dx, dgamma, dbeta);                  \
  }                                                                                                        \
  void BatchNormStats##S(int64_t N, int64_t C, int64_t L, const T* x, T* mean, T* mean_lo, T* var) {        \
    BatchNormStats(N, C, L, x, mean, mean_lo, var);                                                        \
  }                                                                                                        \
  void BatchNormNormalize##S(int64_t N, int64_t C, int64_t L, const T* x, const T* mean, const T* mean_lo,  \
                             const T* rstd, const T* gamma, const T* beta, T* y) {                         \
    BatchNormNormalize(N, C, L, x, mean, mean_lo, rstd, gamma, beta, y);                                   \
  }                                                                                                        \
  void BatchNormBackward##S(int64_t N, int64_t C, int64_t L, const T* dy, const T* x, const T* mean,        \
                            const T* mean_lo, const T* rstd, const T* gamma, bool training, T* dx,         \
                            T* dgamma, T* dbeta) {                                                         \
    BatchNormBackward(N, C, L, dy, x, mean, mean_lo, rstd, gamma, training, dx, dgamma, dbeta);            \
  }                                                                                                        \
  void ChannelCombine##S(int64_t N, int64_t C, int64_t L, const T* a, const T* x, const T* g, const T* coef, \
                         T* out) {                                                                         \
    ChannelCombine(N, C, L, a, x, g, coef, out);                                                           \
  }
NORMLAB_NORM_WRAPPERS(float, F32)
NORMLAB_NORM_WRAPPERS(double, F64)
#undef NORMLAB_NORM_WRAPPERS
int64_t NormTargetId() { return HWY_TARGET; }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(LayerNormForwardF32);
HWY_EXPORT(LayerNormForwardF64);
HWY_EXPORT(LayerNormBackwardF32);
HWY_EXPORT(LayerNormBackwardF64);
HWY_EXPORT(RmsNormForwardF32);
HWY_EXPORT(RmsNormForwardF64);
HWY_EXPORT(RmsNormBackwardF32);
HWY_EXPORT(RmsNormBackwardF64);
HWY_EXPORT(GroupNormForwardF32);
HWY_EXPORT(GroupNormForwardF64);
HWY_EXPORT(GroupNormBackwardF32);
HWY_EXPORT(GroupNormBackwardF64);
HWY_EXPORT(BatchNormStatsF32);
HWY_EXPORT(BatchNormStatsF64);
HWY_EXPORT(BatchNormNormalizeF32);
HWY_EXPORT(BatchNormNormalizeF64);
HWY_EXPORT(BatchNormBackwardF32);
HWY_EXPORT(BatchNormBackwardF64);
HWY_EXPORT(ChannelCombineF32);
HWY_EXPORT(ChannelCombineF64);
HWY_EXPORT(NormTargetId);

#define NORMLAB_NORM_DISPATCH(T, S)                                                                          \
  void layer_norm_forward(int64_t rows, int64_t n, const T* x, const T* gamma, const T* beta, double eps,    \
                          T* y, T* mean, T* mean_lo, T* rstd) {                                              \
    HWY_DYNAMIC_DISPATCH(LayerNormForward##S)(rows, n, x, gamma, beta, eps, y, mean, mean_lo, rstd);         \
  }                                                                                                          \
  void layer_norm_backward(int64_t rows, int64_t n, const T* dy, const T* x, const T* mean,                  \
                           const T* mean_lo, const T* rstd, const T* gamma, T* dx, T* dgamma, T* dbeta) {    \
    HWY_DYNAMIC_DISPATCH(LayerNormBackward##S)(rows, n, dy, x, mean, mean_lo, rstd, gamma, dx, dgamma, dbeta); \
  }                                                                                                          \
  void rms_norm_forward(int64_t rows, int64_t n, const T* x, const T* gamma, double eps, T* y, T* rstd) {    \
    HWY_DYNAMIC_DISPATCH(RmsNormForward##S)(rows, n, x, gamma, eps, y, rstd);                                \
  }                                                                                                          \
  void rms_norm_backward(int64_t rows, int64_t n, const T* dy, const T* x, const T* rstd, const T* gamma,    \
                         T* dx, T* dgamma) {                                                                 \
    HWY_DYNAMIC_DISPATCH(RmsNormBackward##S)(rows, n, dy, x, rstd, gamma, dx, dgamma);                       \
  }                                                                                                          \
  void group_norm_forward(int64_t N, int64_t C, int64_t Sz, int64_t G, const T* x, const T* gamma,           \
                          const T* beta, double eps, T* y, T* mean, T* mean_lo, T* rstd) {                   \
    HWY_DYNAMIC_DISPATCH(GroupNormForward##S)(N, C, Sz, G, x, gamma, beta, eps, y, mean, mean_lo, rstd);     \
  }                                                                                                          \
  void group_norm_backward(int64_t N, int64_t C, int64_t Sz, int64_t G, const T* dy, const T* x,             \
                           const T* mean, const T* mean_lo, const T* rstd, const T* gamma, T* dx,            \
                           T* dgamma, T* dbeta) {                                                            \
    HWY_DYNAMIC_DISPATCH(GroupNormBackward##S)(N, C, Sz, G, dy, x, mean, mean_lo, rstd, gamma, dx, dgamma,   \
                                               dbeta);                                                       \
  }                                                                                                          \
  void batch_norm_stats(int64_t N, int64_t C, int64_t L, const T* x, T* mean, T* mean_lo, T* var) {          \
    HWY_DYNAMIC_DISPATCH(BatchNormStats##S)(N, C, L, x, mean, mean_lo, var);                                 \
  }                                                                                                          \
  void batch_norm_normalize(int64_t N, int64_t C, int64_t L, const T* x, const T* mean, const T* mean_lo,    \
                            const T* rstd, const T* gamma, const T* beta, T* y) {                            \
    HWY_DYNAMIC_DISPATCH(BatchNormNormalize##S)(N, C, L, x, mean, mean_lo, rstd, gamma, beta, y);            \
  }                                                                                                          \
  void batch_norm_backward(int64_t N, int64_t C, int64_t L, const T* dy, const T* x, const T* mean,          \
                           const T* mean_lo, const T* rstd, const T* gamma, bool training, T* dx,            \
                           T* dgamma, T* dbeta) {                                                            \
    HWY_DYNAMIC_DISPATCH(BatchNormBackward##S)(N, C, L, dy, x, mean, mean_lo, rstd, gamma, training, dx,     \
                                               dgamma, dbeta);                                               \
  }                                                                                                          \
  void channel_combine(int64_t N, int64_t C, int64_t L, const T* a, const T* x, const T* g, const T* coef,    \
                       T* out) {                                                                             \
    HWY_DYNAMIC_DISPATCH(ChannelCombine##S)(N, C, L, a, x, g, coef, out);                                    \
  }
NORMLAB_NORM_DISPATCH(float, F32)
NORMLAB_NORM_DISPATCH(double, F64)
#undef NORMLAB_NORM_DISPATCH

const char* norm_active_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(NormTargetId)()); }

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
