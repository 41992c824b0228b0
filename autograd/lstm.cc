// The LSTM step op: shape checks, one fused kernel call forward, and its backward recorded right
// below it calling the fused backward kernel.
#include "autograd/lstm.h"

#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/kernels/lstm.h"

namespace normlab::autograd {

namespace k = kernels;

Tensor lstm_cell(const Tensor& gates, const Tensor& c_prev) {
  check(gates.defined() && c_prev.defined(), "lstm_cell: gates and c_prev must be defined tensors");
  const Shape& gs = gates.shape();
  if (gs.size() != 2 || gs[1] % 4 != 0)
    throw Error("lstm_cell: expected gates of shape (B, 4H) (2-D, the second size a multiple of 4), got " +
                shape_str(gs));
  const int64_t B = gs[0], H = gs[1] / 4;
  if (c_prev.shape() != Shape{B, H})
    throw Error("lstm_cell: expected c_prev of shape " + shape_str({B, H}) + " for gates of shape " + shape_str(gs) +
                ", got " + shape_str(c_prev.shape()));
  if (c_prev.dtype() != gates.dtype())
    throw Error("lstm_cell: expected c_prev to have the gates' dtype " + dtype_name(gates.dtype()) + ", got " +
                dtype_name(c_prev.dtype()));
  // The activations (B, 4H) are saved for the backward; the state holds h then c.
  Tensor state = empty({2, B, H}, gates.dtype()), acts = empty({B, 4 * H}, gates.dtype());
  dispatch(gates.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* s = state.data<T>();
    k::lstm_cell_forward(B, H, gates.data<T>(), c_prev.data<T>(), acts.data<T>(), s + B * H, s);
  });
  return record("LstmCellBackward", state, {gates, c_prev},
                [acts, cp = saved(c_prev), st = saved(state), B, H](const Tensor& g, const Needs& need) {
                  // g (2, B, H): dh then dc. dG is always computed (dc_prev needs the same pass).
                  Tensor dG = empty({B, 4 * H}, g.dtype()), dcp = need[1] ? empty({B, H}, g.dtype()) : Tensor();
                  dispatch(g.dtype(), [&](auto zero) {
                    using T = decltype(zero);
                    const T* gd = g.data<T>();
                    k::lstm_cell_backward(B, H, gd, gd + B * H, acts.data<T>(), cp.data<T>(),
                                          st.data<T>() + B * H, dG.data<T>(), need[1] ? dcp.data<T>() : nullptr);
                  });
                  return std::vector<Tensor>{need[0] ? dG : Tensor(), dcp};
                });
}

}  // namespace normlab::autograd
