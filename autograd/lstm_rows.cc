// The fused LSTM recurrences' products (see lstm_rows.h): their GEMM shapes, the packing of W_hh
// and W_ih, and the gradient of W_hh over all steps.
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

// x W_ih^T: (n, I) x (I, 4H).
k::GemmShape input_forward_shape(const Dims& d, int64_t I, int64_t n) {
  k::GemmShape s;
  s.trans_b = true, s.m = n, s.n = 4 * d.H, s.k = I;
  s.packed_b = pack_w(d), s.blocked = split_rows(d);
  return s;
}

// dG W_ih: (n, 4H) x (4H, I).
k::GemmShape input_backward_shape(const Dims& d, int64_t I, int64_t n) {
  k::GemmShape s;
  s.m = n, s.n = I, s.k = 4 * d.H;
  s.packed_b = pack_w(d), s.blocked = split_rows(d);
  return s;
}

Tensor pack(const k::GemmShape& shape, const Tensor& w) {
  Tensor out;
  dispatch(w.dtype(), [&](auto zero) {
    using T = decltype(zero);
    out = empty({k::gemm_packed_b_size(shape, static_cast<const T*>(nullptr))}, w.dtype());
    k::gemm_pack_b(shape, w.data<T>(), out.data<T>());
  });
  return out;
}

}  // namespace

Tensor packed_w(const Dims& d, bool backward, const Tensor& w) {
  if (!pack_w(d)) return Tensor();
  return pack(backward ? backward_shape(d, d.B) : forward_shape(d, d.B), w);
}

Tensor packed_w_ih(const Dims& d, bool backward, const Tensor& w_ih) {
  if (!pack_w(d)) return Tensor();
  const int64_t I = w_ih.size(1);
  return pack(backward ? input_backward_shape(d, I, d.B) : input_forward_shape(d, I, d.B), w_ih);
}

template <typename T>
void input_forward(const Dims& d, int64_t I, int64_t n, const T* x, const T* w, const T* bias, T* xp) {
  k::GemmShape s = input_forward_shape(d, I, n);
  s.bias = bias;
  k::gemm(s, x, w, xp);
}

template <typename T>
void input_backward(const Dims& d, int64_t I, int64_t n, const T* dG, const T* w, T* dx) {
  k::gemm(input_backward_shape(d, I, n), dG, w, dx);
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
  template void w_hh_grad<T>(const Dims&, const T*, const T*, const T*, T*);                   \
  template void input_forward<T>(const Dims&, int64_t, int64_t, const T*, const T*, const T*, T*); \
  template void input_backward<T>(const Dims&, int64_t, int64_t, const T*, const T*, T*);
NORMLAB_LSTM_ROWS(float)
NORMLAB_LSTM_ROWS(double)
#undef NORMLAB_LSTM_ROWS

}  // namespace normlab::autograd::lstm_rows
