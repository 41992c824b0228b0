// LSTM cell kernels (public header, no SIMD types): the gate activations and cell update of one
// time step, fused, with its backward. Highway bodies in lstm-inl.h, dispatch in lstm.cc; the scalar
// references in namespace ref below define what every SIMD target must compute.
//
// Layout: B rows (the batch) of H units. The gate pre-activations G (B, 4H) hold, in each row, the
// blocks [i | f | g | o] of H values (PyTorch's order: input, forget, cell, output gate), already
// summed (x W_ih^T + b_ih + h W_hh^T + b_hh). acts (B, 4H) holds the activations in the same layout,
// saved for the backward:
//   i = sigmoid(G_i), f = sigmoid(G_f), g = tanh(G_g), o = sigmoid(G_o)
//   c = f c_prev + i g                                   (the cell update)
//   h = o tanh(y),  y = c for nn::LSTM, y = LN(c) for the LayerNorm LSTM   (the output)
// The kernels come in two granularities: the fused cell (update and output with y = c, one pass)
// for nn::LSTM, and its two halves (gates: the update; output: h from o and any y) for cells that
// transform c before the output. sigmoid(x) is 1 / (1 + e^-x) written as e / (1 + e) for x < 0 with
// e = e^-|x| (no overflow); NaN inputs give NaN outputs.
//
// Conventions: arrays are contiguous; outputs must not alias inputs; gradients are overwritten,
// not accumulated; the incoming gradients of the fused and the gates backward (dh or d_o, dc) may be
// null (no gradient: zeros), the output backward's dh may not. Elementwise, so results do not
// depend on threads; everything runs on the calling thread.
#pragma once
#include <cmath>
#include <cstdint>

namespace normlab::autograd::kernels {

// ---- Fused cell: G (B, 4H), c_prev (B, H) -> acts (B, 4H), c (B, H), h (B, H) ----------------------
void lstm_cell_forward(int64_t B, int64_t H, const float* G, const float* c_prev, float* acts, float* c, float* h);
void lstm_cell_forward(int64_t B, int64_t H, const double* G, const double* c_prev, double* acts, double* c,
                       double* h);
// From dh, dc (B, H) (the gradients of the step's h and c from later steps and the loss):
//   t = tanh(c),  dc_tot = dc + dh o (1 - t^2)
//   dG_i = dc_tot g i (1 - i),  dG_f = dc_tot c_prev f (1 - f),  dG_g = dc_tot i (1 - g^2),
//   dG_o = dh t o (1 - o),  dc_prev = dc_tot f.
// dG (B, 4H), dc_prev (B, H) (may be null).
void lstm_cell_backward(int64_t B, int64_t H, const float* dh, const float* dc, const float* acts,
                        const float* c_prev, const float* c, float* dG, float* dc_prev);
void lstm_cell_backward(int64_t B, int64_t H, const double* dh, const double* dc, const double* acts,
                        const double* c_prev, const double* c, double* dG, double* dc_prev);

// ---- Halves: the gates and update, then the output from any y ---------------------------------------
// For cells that transform c before the output tanh (y = LN(c), BN(c)): the update gives acts and c,
// the caller takes o (the o block of acts) and computes y, the output gives h = o tanh(y).
// acts (B, 4H) and c (B, H) as the fused cell; no h.
void lstm_gates_forward(int64_t B, int64_t H, const float* G, const float* c_prev, float* acts, float* c);
void lstm_gates_forward(int64_t B, int64_t H, const double* G, const double* c_prev, double* acts, double* c);
// The update's backward from the gradients of o and of c (B, H) (either may be null: zeros):
//   dG_i, dG_f, dG_g, dc_prev as the fused cell's with dc_tot = dc,  dG_o = do o (1 - o).
void lstm_gates_backward(int64_t B, int64_t H, const float* d_o, const float* dc, const float* acts,
                         const float* c_prev, float* dG, float* dc_prev);
void lstm_gates_backward(int64_t B, int64_t H, const double* d_o, const double* dc, const double* acts,
                         const double* c_prev, double* dG, double* dc_prev);
// h = o tanh(y), all (B, H) (o the output gate's activation).
void lstm_output_forward(int64_t n, const float* o, const float* y, float* h);
void lstm_output_forward(int64_t n, const double* o, const double* y, double* h);
// t = tanh(y): do = dh t, dy = dh o (1 - t^2); n = B H elements.
void lstm_output_backward(int64_t n, const float* dh, const float* o, const float* y, float* d_o, float* dy);
void lstm_output_backward(int64_t n, const double* dh, const double* o, const double* y, double* d_o, double* dy);

// The name of the Highway target these kernels dispatch to now (e.g. "AVX2"), for tests.
const char* lstm_active_target();

// ---- Scalar references: what the Highway kernels must compute -------------------------------------
// Plain loops in double (float data is promoted), with std::exp and std::tanh.
namespace ref {

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

template <typename T>
void lstm_gates_forward(int64_t B, int64_t H, const T* G, const T* c_prev, T* acts, T* c) {
  for (int64_t b = 0; b < B; ++b) {
    const T* gr = G + b * 4 * H;
    T* ar = acts + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const double i = sigmoid(gr[j]), f = sigmoid(gr[H + j]), g = std::tanh(static_cast<double>(gr[2 * H + j]));
      ar[j] = static_cast<T>(i);
      ar[H + j] = static_cast<T>(f);
      ar[2 * H + j] = static_cast<T>(g);
      ar[3 * H + j] = static_cast<T>(sigmoid(gr[3 * H + j]));
      c[b * H + j] = static_cast<T>(f * c_prev[b * H + j] + i * g);
    }
  }
}

template <typename T>
void lstm_output_forward(int64_t n, const T* o, const T* y, T* h) {
  for (int64_t k = 0; k < n; ++k) h[k] = static_cast<T>(o[k] * std::tanh(static_cast<double>(y[k])));
}

template <typename T>
void lstm_cell_forward(int64_t B, int64_t H, const T* G, const T* c_prev, T* acts, T* c, T* h) {
  lstm_gates_forward(B, H, G, c_prev, acts, c);
  for (int64_t b = 0; b < B; ++b) lstm_output_forward(H, acts + b * 4 * H + 3 * H, c + b * H, h + b * H);
}

template <typename T>
void lstm_output_backward(int64_t n, const T* dh, const T* o, const T* y, T* d_o, T* dy) {
  for (int64_t k = 0; k < n; ++k) {
    const double t = std::tanh(static_cast<double>(y[k]));
    d_o[k] = static_cast<T>(dh[k] * t);
    dy[k] = static_cast<T>(dh[k] * o[k] * (1 - t * t));
  }
}

template <typename T>
void lstm_gates_backward(int64_t B, int64_t H, const T* d_o, const T* dc, const T* acts, const T* c_prev, T* dG,
                         T* dc_prev) {
  for (int64_t b = 0; b < B; ++b) {
    const T* ar = acts + b * 4 * H;
    T* dr = dG + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const double i = ar[j], f = ar[H + j], g = ar[2 * H + j], o = ar[3 * H + j], d = dc ? dc[b * H + j] : 0.0;
      dr[j] = static_cast<T>(d * g * i * (1 - i));
      dr[H + j] = static_cast<T>(d * c_prev[b * H + j] * f * (1 - f));
      dr[2 * H + j] = static_cast<T>(d * i * (1 - g * g));
      dr[3 * H + j] = static_cast<T>((d_o ? d_o[b * H + j] : 0.0) * o * (1 - o));
      if (dc_prev) dc_prev[b * H + j] = static_cast<T>(d * f);
    }
  }
}

template <typename T>
void lstm_cell_backward(int64_t B, int64_t H, const T* dh, const T* dc, const T* acts, const T* c_prev, const T* c,
                        T* dG, T* dc_prev) {
  for (int64_t b = 0; b < B; ++b) {
    const T* ar = acts + b * 4 * H;
    T* dr = dG + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const double i = ar[j], f = ar[H + j], g = ar[2 * H + j], o = ar[3 * H + j];
      const double t = std::tanh(static_cast<double>(c[b * H + j]));
      const double gh = dh ? dh[b * H + j] : 0.0;
      const double d = (dc ? dc[b * H + j] : 0.0) + gh * o * (1 - t * t);
      dr[j] = static_cast<T>(d * g * i * (1 - i));
      dr[H + j] = static_cast<T>(d * c_prev[b * H + j] * f * (1 - f));
      dr[2 * H + j] = static_cast<T>(d * i * (1 - g * g));
      dr[3 * H + j] = static_cast<T>(gh * t * o * (1 - o));
      if (dc_prev) dc_prev[b * H + j] = static_cast<T>(d * f);
    }
  }
}

}  // namespace ref
}  // namespace normlab::autograd::kernels
