// LSTM cell kernels: compiled once per Highway target, dispatched at run time (once per call).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "autograd/kernels/lstm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "autograd/kernels/lstm-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
// Non-template wrappers: Highway exports functions, not templates.
#define NORMLAB_LSTM_WRAPPERS(T, S)                                                                        \
  void LstmCellForward##S(int64_t B, int64_t H, const T* G, const T* c_prev, T* acts, T* c, T* h) {         \
    CellForward<T, true>(B, H, G, c_prev, acts, c, h);                                                     \
  }                                                                                                        \
  void LstmCellBackward##S(int64_t B, int64_t H, const T* dh, const T* dc, const T* acts, const T* c_prev,  \
                           const T* c, T* dG, T* dc_prev) {                                                \
    CellBackward<T, true>(B, H, dh, dc, acts, c_prev, c, dG, dc_prev);                                     \
  }                                                                                                        \
  void LstmGatesForward##S(int64_t B, int64_t H, const T* G, const T* c_prev, T* acts, T* c) {              \
    CellForward<T, false>(B, H, G, c_prev, acts, c, nullptr);                                              \
  }                                                                                                        \
  void LstmGatesBackward##S(int64_t B, int64_t H, const T* d_o, const T* dc, const T* acts, const T* c_prev, \
                            T* dG, T* dc_prev) {                                                           \
    CellBackward<T, false>(B, H, d_o, dc, acts, c_prev, nullptr, dG, dc_prev);                             \
  }                                                                                                        \
  void LstmOutputForward##S(int64_t n, const T* o, const T* y, T* h) { OutputForward(n, o, y, h); }         \
  void LstmOutputBackward##S(int64_t n, const T* dh, const T* o, const T* y, T* d_o, T* dy) {               \
    OutputBackward(n, dh, o, y, d_o, dy);                                                                  \
  }
NORMLAB_LSTM_WRAPPERS(float, F32)
NORMLAB_LSTM_WRAPPERS(double, F64)
#undef NORMLAB_LSTM_WRAPPERS
int64_t LstmTargetId() { return HWY_TARGET; }
}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normlab::autograd::kernels {

HWY_EXPORT(LstmCellForwardF32);
HWY_EXPORT(LstmCellForwardF64);
HWY_EXPORT(LstmCellBackwardF32);
HWY_EXPORT(LstmCellBackwardF64);
HWY_EXPORT(LstmGatesForwardF32);
HWY_EXPORT(LstmGatesForwardF64);
HWY_EXPORT(LstmGatesBackwardF32);
HWY_EXPORT(LstmGatesBackwardF64);
HWY_EXPORT(LstmOutputForwardF32);
HWY_EXPORT(LstmOutputForwardF64);
HWY_EXPORT(LstmOutputBackwardF32);
HWY_EXPORT(LstmOutputBackwardF64);
HWY_EXPORT(LstmTargetId);

#define NORMLAB_LSTM_DISPATCH(T, S)                                                                         \
  void lstm_cell_forward(int64_t B, int64_t H, const T* G, const T* c_prev, T* acts, T* c, T* h) {          \
    HWY_DYNAMIC_DISPATCH(LstmCellForward##S)(B, H, G, c_prev, acts, c, h);                                  \
  }                                                                                                         \
  void lstm_cell_backward(int64_t B, int64_t H, const T* dh, const T* dc, const T* acts, const T* c_prev,   \
                          const T* c, T* dG, T* dc_prev) {                                                  \
    HWY_DYNAMIC_DISPATCH(LstmCellBackward##S)(B, H, dh, dc, acts, c_prev, c, dG, dc_prev);                  \
  }                                                                                                         \
  void lstm_gates_forward(int64_t B, int64_t H, const T* G, const T* c_prev, T* acts, T* c) {               \
    HWY_DYNAMIC_DISPATCH(LstmGatesForward##S)(B, H, G, c_prev, acts, c);                                    \
  }                                                                                                         \
  void lstm_gates_backward(int64_t B, int64_t H, const T* d_o, const T* dc, const T* acts, const T* c_prev, \
                           T* dG, T* dc_prev) {                                                             \
    HWY_DYNAMIC_DISPATCH(LstmGatesBackward##S)(B, H, d_o, dc, acts, c_prev, dG, dc_prev);                   \
  }                                                                                                         \
  void lstm_output_forward(int64_t n, const T* o, const T* y, T* h) {                                       \
    HWY_DYNAMIC_DISPATCH(LstmOutputForward##S)(n, o, y, h);                                                 \
  }                                                                                                         \
  void lstm_output_backward(int64_t n, const T* dh, const T* o, const T* y, T* d_o, T* dy) {                \
    HWY_DYNAMIC_DISPATCH(LstmOutputBackward##S)(n, dh, o, y, d_o, dy);                                      \
  }
NORMLAB_LSTM_DISPATCH(float, F32)
NORMLAB_LSTM_DISPATCH(double, F64)
#undef NORMLAB_LSTM_DISPATCH

const char* lstm_active_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(LstmTargetId)()); }

}  // namespace normlab::autograd::kernels
#endif  // HWY_ONCE
