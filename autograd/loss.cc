// Softmax and losses: composites of primitives (their gradients come for free) plus nll_loss.
#include "autograd/loss.h"

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/reduce.h"

namespace normlab::autograd {

using Grads = std::vector<Tensor>;

Tensor log_softmax(const Tensor& x, int64_t dim) {
  const int64_t d = normalize_dim(dim, x.dim(), "log_softmax");
  // The shift by the max does not change the result, so it carries no gradient (detached).
  const Tensor m = max(x.detach(), {d}, true);
  const Tensor z = sub(x, m);
  return sub(z, log(sum(exp(z), {d}, true)));
}

Tensor softmax(const Tensor& x, int64_t dim) { return exp(log_softmax(x, dim)); }

Tensor nll_loss(const Tensor& logp, const std::vector<int64_t>& target) {
  if (logp.dim() != 2)
    throw Error("nll_loss: expected input of shape (N, C), got " + shape_str(logp.shape()));
  const int64_t n = logp.size(0), c = logp.size(1);
  if (static_cast<int64_t>(target.size()) != n)
    throw Error("nll_loss: expected " + std::to_string(n) + " targets (the batch size of input " +
                shape_str(logp.shape()) + "), got " + std::to_string(target.size()));
  if (n == 0) throw Error("nll_loss: the batch is empty");
  for (int64_t i = 0; i < n; ++i)
    if (target[i] < 0 || target[i] >= c)
      throw Error("nll_loss: target " + std::to_string(target[i]) + " at position " + std::to_string(i) +
                  " is out of bounds for " + std::to_string(c) + " classes");
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc -= logp.flat(i * c + target[i]);
  Tensor out = scalar(acc / n, logp.dtype());
  // d loss / d logp[i, t_i] = -1/N, zero elsewhere
  return record("NllLossBackward", out, {logp}, [target, n, c, dt = logp.dtype()](const Tensor& g, const Needs&) {
    Tensor gx = zeros({n, c}, dt);
    const double v = -g.item() / n;
    for (int64_t i = 0; i < n; ++i) gx.set_flat(i * c + target[i], v);
    return Grads{gx};
  });
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& target) {
  if (logits.dim() != 2)
    throw Error("cross_entropy: expected logits of shape (N, C), got " + shape_str(logits.shape()));
  return nll_loss(log_softmax(logits, 1), target);
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  if (input.shape() != target.shape())
    throw Error("mse_loss: input and target must have the same shape, got " + shape_str(input.shape()) + " and " +
                shape_str(target.shape()));
  const Tensor d = sub(input, target);
  return mean(mul(d, d));
}

}  // namespace normlab::autograd
