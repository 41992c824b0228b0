// gradcheck: analytic Jacobian (backward per output element) vs central differences, in float64.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"

namespace normlab::autograd {

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts) {
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    if (inputs[i].dtype() != DType::Float64)
      throw Error("gradcheck: input " + std::to_string(i) + " is " + dtype_name(inputs[i].dtype()) +
                  "; gradcheck needs float64 inputs (use .to(DType::Float64)), as finite differences "
                  "in float32 are too coarse");
    any = any || inputs[i].requires_grad();
  }
  if (!any) throw Error("gradcheck: no input requires grad, so there is nothing to check");

  // The backward passes below go through the inputs' .grad; whatever the caller had there is put
  // back when gradcheck returns or throws.
  struct RestoreGrads {
    std::vector<Tensor> inputs, grads;
    ~RestoreGrads() {
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].defined()) inputs[i].impl().grad = grads[i].defined() ? grads[i].impl_ptr() : nullptr;
    }
  } restore{inputs, {}};
  for (const Tensor& t : inputs) restore.grads.push_back(t.defined() ? t.grad() : Tensor());

  // Analytic Jacobian: one backward per output element, with a one-hot output gradient.
  Tensor out = fn(inputs);
  if (!out.defined() || out.dtype() != DType::Float64)
    throw Error("gradcheck: the function must return a float64 tensor");
  const int64_t m = out.numel();
  std::vector<std::vector<double>> analytic(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) analytic[i].assign(m * inputs[i].numel(), 0.0);
  if (out.requires_grad()) {
    for (int64_t j = 0; j < m; ++j) {
      for (const Tensor& t : inputs)
        if (t.defined()) t.set_grad(Tensor());
      Tensor onehot = zeros(out.shape(), DType::Float64);
      onehot.set_flat(j, 1.0);
      out.backward(onehot, /*retain_graph=*/true);
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (analytic[i].empty()) continue;
        const Tensor g = inputs[i].grad();
        if (!g.defined()) continue;
        for (int64_t k = 0; k < inputs[i].numel(); ++k) analytic[i][j * inputs[i].numel() + k] = g.flat(k);
      }
    }
  }

  // Numeric Jacobian by central differences, compared entry by entry.
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (analytic[i].empty()) continue;
    const Tensor& x = inputs[i];
    const int64_t n = x.numel();
    for (int64_t k = 0; k < n; ++k) {
      const double orig = x.flat(k);
      // Copied out at once: the output may be a view of x (reshape, narrow, to() of the same
      // dtype) that the next perturbation would change.
      x.set_flat(k, orig + opts.eps);
      const std::vector<double> plus = fn(inputs).to_vector();
      x.set_flat(k, orig - opts.eps);
      const std::vector<double> minus = fn(inputs).to_vector();
      x.set_flat(k, orig);
      for (int64_t j = 0; j < m; ++j) {
        const double num = (plus[j] - minus[j]) / (2 * opts.eps);
        const double ana = analytic[i][j * n + k];
        if (!(std::fabs(ana - num) <= opts.atol + opts.rtol * std::fabs(num))) {
          if (!opts.raise_exception) return false;
          std::ostringstream os;
          os.precision(10);
          os << "gradcheck: Jacobian mismatch for input " << i << " (shape " << shape_str(x.shape())
             << ") at element " << shape_str(unravel_index(k, x.shape())) << " and output element "
             << shape_str(unravel_index(j, out.shape())) << ": numerical " << num << " vs analytical " << ana
             << " (atol " << opts.atol << ", rtol " << opts.rtol << ")";
          throw Error(os.str());
        }
      }
    }
  }
  return true;
}

}  // namespace normlab::autograd
