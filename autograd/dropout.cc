// Dropout as an op: the masked forward and its backward side by side (nn::Dropout is the module).
#include "autograd/dropout.h"

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "base/format.h"

namespace normlab::autograd {

void check_dropout_p(double p, const std::string& who) {
  if (!(p >= 0 && p <= 1))  // also refuses NaN
    throw Error(who + ": dropout probability has to be between 0 and 1, but got " + base::py_float(p));
}

Tensor dropout(const Tensor& x, double p, Generator& gen) {
  check_dropout_p(p, "dropout");
  const double scale = p < 1 ? 1 / (1 - p) : 0;  // p = 1 drops everything: zeros, not 0 * inf
  Tensor mask = empty(x.shape(), x.dtype());
  Tensor out = empty(x.shape(), x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* xs = x.data<T>();
    T* m = mask.data<T>();
    T* y = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      m[i] = gen.uniform() >= p ? static_cast<T>(scale) : T(0);
      y[i] = xs[i] * m[i];
    }
  });
  // dx = dy * m: the backward keeps only the mask.
  return record("DropoutBackward", out, {x}, [mask](const Tensor& g, const Needs&) {
    return std::vector<Tensor>{mul(g, mask)};  // the mask a constant: the same in a create_graph pass
  }, Backward::Differentiable);
}

}  // namespace normlab::autograd
