// The fused LSTM recurrences' products (see lstm_rows.h): their GEMM shapes, W_hh's packing and
// the gradient of W_hh over all steps.
#include "autograd/lstm_rows.h"

#include "autograd/kernels/gemm.h"

namespace normlab::autograd::lstm_rows {

namespace k = kernels;

namespace {

// W_hh is packed from kPartRows rows on (its blocked GEMM, whatever n); otherwise the products
// are blocked when the rows are split.
bool pack_w(const Dims& d) { return d.B >= kPartRows; }

// h W_hh^T: (n, H) x (H, 4H).
k::GemmShape forward_shape(const Dims& d, int64_t n) {
  k::GemmShape s;
  s.trans_b = true, s.m = n, s.n = 4 * d.H, s.k = d.H;
  s.packed_b = pack_w(d), s.blocked = split_rows(d);
  return s;
}

// dA W_hh: (n, 4H) x (4H, H).
k::GemmShape backward_shape(const Dims& d, int64_t n) {
  k::GemmShape s;
  s.m = n, s.n = d.H, s.k = 4 * d.H;
  s.packed_b = pack_w(d), s.blocked = split_rows(d);
  return s;
}

}  // namespace

Tensor packed_w(const Dims& d, bool backward, const Tensor& w) {
  if (!pack_w(d)) return Tensor();
  const k::GemmShape shape = backward ? backward_shape(d, d.B) : forward_shape(d, d.B);
  Tensor out;
  dispatch(w.dtype(), [&](auto zero) {
    using T = decltype(zero);
    out = empty({k::gemm_packed_b_size(shape, static_cast<const T*>(nullptr))}, w.dtype());
    k::gemm_pack_b(shape, w.data<T>(), out.data<T>());
  });
  return out;
}

template <typename T>
void hidden_forward(const Dims& d, int64_t n, const T* h, const T* w, const T* residual, T* out) {
  k::GemmShape s = forward_shape(d, n);
  s.residual = residual;
  k::gemm(s, h, w, out);
}

template <typename T>
void hidden_backward(const Dims& d, int64_t n, const T* dA, const T* w, const T* residual, T* dh) {
  k::GemmShape s = backward_shape(d, n);
  s.residual = residual;
  k::gemm(s, dA, w, dh);
}

template <typename T>
void w_hh_grad(const Dims& d, const T* dA, const T* out, const T* h0, T* dw) {
  const int64_t B = d.B, H = d.H, G4 = 4 * H;
  k::GemmShape s;
  s.trans_a = true, s.m = G4, s.n = H;
  if (d.T > 1) {
    s.k = (d.T - 1) * B;
    k::gemm(s, dA + B * G4, out, dw);
  }
  if (h0) {
    s.k = B, s.accumulate = d.T > 1;
    k::gemm(s, dA, h0, dw);
  }
  if (d.T == 1 && !h0) std::fill(dw, dw + G4 * H, T(0));
}

#define NORMLAB_LSTM_ROWS(T)                                                                     \
  template void hidden_forward<T>(const Dims&, int64_t, const T*, const T*, const T*, T*);      \
  template void hidden_backward<T>(const Dims&, int64_t, const T*, const T*, const T*, T*);     \
  template void w_hh_grad<T>(const Dims&, const T*, const T*, const T*, T*);
NORMLAB_LSTM_ROWS(float)
NORMLAB_LSTM_ROWS(double)
#undef NORMLAB_LSTM_ROWS

}  // namespace normlab::autograd::lstm_rows
