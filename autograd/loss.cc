// Softmax and losses: composites of primitives (their gradients come for free), nll_loss, and a
// fused cross_entropy.
#include "autograd/loss.h"

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/softmax.h"
#include "autograd/reduce.h"

namespace normlab::autograd {

using Grads = std::vector<Tensor>;

Tensor log_softmax(const Tensor& x, int64_t dim) {
  const int64_t d = normalize_dim(dim, x.dim(), "log_softmax");
  // The shift by the max does not change the result, so it carries no gradient (detached). An
  // empty tensor has no max (and nothing to shift).
  const Tensor z = x.numel() == 0 ? x : sub(x, max(x.detach(), {d}, true));
  return renamed(sub(z, log(sum(exp(z), {d}, true))), "LogSoftmaxBackward0");
}

Tensor softmax(const Tensor& x, int64_t dim) { return renamed(exp(log_softmax(x, dim)), "SoftmaxBackward0"); }

namespace {

// Input (N, C) with N >= 1 and N class targets in [0, C); errors name `op` (what the user called).
void check_targets(const Tensor& x, const std::vector<int64_t>& target, const std::string& op) {
  if (x.dim() != 2) throw Error(op + ": expected input of shape (N, C), got " + shape_str(x.shape()));
  const int64_t n = x.size(0), c = x.size(1);
  if (static_cast<int64_t>(target.size()) != n)
    throw Error(op + ": expected " + std::to_string(n) + " targets (the batch size of input " +
                shape_str(x.shape()) + "), got " + std::to_string(target.size()));
  if (n == 0) throw Error(op + ": the batch is empty (input " + shape_str(x.shape()) + ")");
  for (int64_t i = 0; i < n; ++i)
    if (target[i] < 0 || target[i] >= c)
      throw Error(op + ": target " + std::to_string(target[i]) + " at position " + std::to_string(i) +
                  " is out of bounds for " + std::to_string(c) + " classes");
}

}  // namespace

Tensor nll_loss(const Tensor& logp, const std::vector<int64_t>& target) {
  check_targets(logp, target, "nll_loss");
  const int64_t n = logp.size(0), c = logp.size(1);
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc -= logp.flat(i * c + target[i]);
  Tensor out = scalar(acc / n, logp.dtype());
  // d loss / d logp[i, t_i] = -1/N, zero elsewhere
  return record("NllLossBackward0", out, {logp}, [target, n, c, dt = logp.dtype()](const Tensor& g, const Needs&) {
    Tensor gx = zeros({n, c}, dt);
    const bool graph = grad_enabled();  // a create_graph pass: gx = w g with w constant, recorded
    const double v = graph ? -1.0 / n : -g.item() / n;
    for (int64_t i = 0; i < n; ++i) gx.set_flat(i * c + target[i], v);
    return Grads{graph ? mul(gx, g) : gx};
  }, Backward::Differentiable);
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& target) {
  check_targets(logits, target, "cross_entropy");
  // One fused op for nll_loss(log_softmax(x, 1), t), as one node (PyTorch names the last
  // node of its composite NllLossBackward0). Per row i, in double (kernels/softmax.h):
  //   m = max_j x_ij,  s = sum_j e^(x_ij - m),  log p_ij = x_ij - m - log s,
  //   loss = -(1/N) sum_i log p_{i,t_i};  d loss / d x_ij = (p_ij - [j = t_i]) / N.
  // Saves only p (N, C), the softmax.
  const int64_t n = logits.size(0), c = logits.size(1);
  Tensor p = empty({n, c}, logits.dtype());
  double acc = 0;  // sum_i -log p_{i,t_i}
  dispatch(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    acc = kernels::cross_entropy_forward(n, c, logits.data<T>(), target.data(), p.data<T>());
  });
  Tensor out = scalar(acc / n, logits.dtype());
  return record("NllLossBackward0", out, {logits}, [x = saved(logits), p, target, n, c](const Tensor& g, const Needs&) {
    if (grad_enabled()) {
      // A create_graph pass: (softmax(x) - onehot) g / N of recorded ops, softmax computed again
      // from x so that its Hessian (diag(p) - p p^T per row) flows on.
      Tensor onehot = zeros({n, c}, p.dtype());
      for (int64_t i = 0; i < n; ++i) onehot.set_flat(i * c + target[i], 1.0);
      return Grads{mul(sub(softmax(x, 1), onehot), div(g, static_cast<double>(n)))};
    }
    Tensor gx = empty({n, c}, p.dtype());
    dispatch(p.dtype(), [&](auto zero) {
      using T = decltype(zero);
      kernels::cross_entropy_backward(n, c, p.data<T>(), target.data(), g.item() / n, gx.data<T>());
    });
    return Grads{gx};
  }, Backward::Differentiable);
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  if (input.shape() != target.shape())
    throw Error("mse_loss: input and target must have the same shape, got " + shape_str(input.shape()) + " and " +
                shape_str(target.shape()));
  if (input.dtype() != target.dtype())
    throw Error("mse_loss: input and target must have the same dtype, got " + dtype_name(input.dtype()) + " and " +
                dtype_name(target.dtype()));
  const Tensor d = sub(input, target);
  return renamed(mean(mul(d, d)), "MseLossBackward0");
}

}  // namespace normlab::autograd
