// Dropout: the module that owns the generator (the op is autograd::dropout).
#include "nn/dropout.h"

#include "autograd/dropout.h"
#include "base/format.h"

namespace normlab::nn {

Dropout::Dropout(double p, uint64_t seed) : p_(p), gen_(seed) { autograd::check_dropout_p(p, "Dropout"); }

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0) return x;
  return autograd::dropout(x, p_, gen_);
}

std::string Dropout::repr() const { return "Dropout(p=" + base::py_float(p_) + ", inplace=False)"; }

}  // namespace normlab::nn
