// How the fused LSTM recurrences (autograd/lstm_recurrence.h, autograd/ln_lstm_recurrence.h) split
// the batch and run their products: parts of the rows run on their own threads through every step,
// W_hh is packed once per pass, and the per-step products keep the same bits however the rows are
// split. Internal to those ops (the GEMM's shapes in lstm_rows.cc).
#pragma once
#include <algorithm>
#include <cstdint>

#include "autograd/grain.h"
#include "autograd/tensor.h"
#include "base/thread_pool.h"

namespace normlab::autograd::lstm_rows {

/// Rows of the batch per part, at least: a step's hidden GEMM on fewer rows runs at a poorer rate
/// than the second core gains. Batches below 2 kPartRows run as one part with the GEMM's usual path
/// choice; from 2 kPartRows on every product is blocked (kernels::GemmShape::blocked), on one part
/// or several, so that the bits do not depend on how many parts the thread count allows.
constexpr int64_t kPartRows = 16;

/// Steps T, batch rows B, hidden size H.
struct Dims {
  int64_t T, B, H;
};

/// Whether the rows may be split into parts (see kPartRows).
inline bool split_rows(const Dims& d) { return d.B >= 2 * kPartRows; }

/// Parts of the rows: up to one per thread the work allows (the forward's multiply-adds against
/// the GEMM grain), each of at least kPartRows rows.
inline int64_t row_parts(const Dims& d) {
  if (!split_rows(d)) return 1;
  const double macs = static_cast<double>(d.T) * static_cast<double>(d.B) * 4.0 * static_cast<double>(d.H * d.H);
  return std::max<int64_t>(1, std::min<int64_t>(d.B / kPartRows, threads_for(macs, grains().gemm)));
}

/// Runs rows(r0, r1) on row_parts(d) ranges of the batch's rows, each on one thread.
template <class Rows>
void on_row_parts(const Dims& d, const Rows& rows) {
  const int64_t parts = row_parts(d);
  base::parallel_parts(static_cast<int>(parts), parts, [&](int64_t q) { rows(d.B * q / parts, d.B * (q + 1) / parts); });
}

/// From kPartRows rows on, W_hh is packed for the GEMM once per pass (kernels::gemm_pack_b) rather
/// than read or packed again at every step: the forward's products h W_hh^T (n, H) x (H, 4H), the
/// backward's d W_hh (n, 4H) x (4H, H). Fewer rows take the GEMM's own path choice (dot products
/// for a handful of rows). Returns W_hh (4H, H) packed for the forward's or the backward's
/// products, or an undefined tensor when it is not packed (then pass W_hh itself).
Tensor packed_w(const Dims& d, bool backward, const Tensor& w);

/// The forward's product on n rows: out (n, 4H) = h (n, H) W_hh^T [+ residual (n, 4H)], w as
/// packed_w(d, false, W_hh) gives it (or W_hh itself when not packed).
template <typename T>
void hidden_forward(const Dims& d, int64_t n, const T* h, const T* w, const T* residual, T* out);
/// The backward's product on n rows: dh (n, H) = dA (n, 4H) W_hh [+ residual (n, H)], w as
/// packed_w(d, true, W_hh) gives it (or W_hh itself).
template <typename T>
void hidden_backward(const Dims& d, int64_t n, const T* dA, const T* w, const T* residual, T* dh);

/// The input projection's W_ih (4H, I) packed like W_hh (packed_w) for the products of
/// input_forward (backward false) or input_backward (true), or undefined when not packed.
Tensor packed_w_ih(const Dims& d, bool backward, const Tensor& w_ih);

/// The input projection on n rows: xp (n, 4H) = x (n, I) W_ih^T [+ bias (4H) on every row], w as
/// packed_w_ih(d, false, W_ih) gives it (or W_ih itself). The same blocked sums as the hidden
/// products when the rows are split, so a part's rows get the bits of any other split.
template <typename T>
void input_forward(const Dims& d, int64_t I, int64_t n, const T* x, const T* w, const T* bias, T* xp);
/// The input gradient on n rows: dx (n, I) = dG (n, 4H) W_ih, w as packed_w_ih(d, true, W_ih)
/// gives it (or W_ih itself).
template <typename T>
void input_backward(const Dims& d, int64_t I, int64_t n, const T* dG, const T* w, T* dx);

/// dW_hh (4H, H) = sum over t of dA_t^T h_{t-1}, dA (T, B, 4H) the gradients of the steps' products
/// h_{t-1} W_hh^T: the steps 1 .. T-1 as one product over their (T-1) B rows (h_0 .. h_{T-2} are
/// out's first rows, out (T + 1, B, H)), then step 0's with h0 if there is one (else zeros for T = 1).
template <typename T>
void w_hh_grad(const Dims& d, const T* dA, const T* out, const T* h0, T* dw);

}  // namespace normlab::autograd::lstm_rows
