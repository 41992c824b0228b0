// gradcheck: analytic Jacobian (backward per output element) vs central differences, in float64;
// gradgradcheck: the same for the vector-Jacobian product of a create_graph backward.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"

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

  // Numeric Jacobian by central differences, compared entry by entry. fn runs with grad mode as
  // the caller had it (gradgradcheck's fn differentiates inside); set_flat is never recorded.
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

bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const Tensor& grad_outputs,
                   const GradcheckOptions& opts) {
  const size_t n = inputs.size();
  std::vector<size_t> wrt;  // the inputs that require grad
  for (size_t i = 0; i < n; ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) wrt.push_back(i);
  if (wrt.empty()) throw Error("gradgradcheck: no input requires grad, so there is nothing to check");
  Tensor v = grad_outputs;
  if (!v.defined()) {
    Generator gen(0);
    const Tensor out = fn(inputs);
    v = randn(out.shape(), gen, 0, 1, DType::Float64);
  }
  if (v.dtype() != DType::Float64)
    throw Error("gradgradcheck: grad_outputs is " + dtype_name(v.dtype()) + "; it must be float64");
  v = v.detach().clone();
  v.requires_grad_();
  // vjp(inputs..., v): the first derivatives as one float64 vector, with their graph.
  const GradcheckFn vjp = [&fn, n, wrt](const std::vector<Tensor>& all) {
    const std::vector<Tensor> ins(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    const Tensor out = fn(ins);
    std::vector<Tensor> diff;
    for (size_t i : wrt) diff.push_back(ins[i]);
    std::vector<Tensor> parts;
    if (out.requires_grad()) {
      GradOptions go;
      go.create_graph = true;
      go.allow_unused = true;
      const std::vector<Tensor> gs = grad({out}, diff, {all[n]}, go);
      for (size_t j = 0; j < gs.size(); ++j)
        parts.push_back(reshape(gs[j].defined() ? gs[j] : zeros(diff[j].shape(), DType::Float64), {-1}));
    } else {
      for (const Tensor& d : diff) parts.push_back(zeros({d.numel()}, DType::Float64));
    }
    return cat(parts, 0);
  };
  std::vector<Tensor> all(inputs);
  all.push_back(v);
  return gradcheck(vjp, all, opts);
}

bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, Generator& gen,
                   const GradcheckOptions& opts) {
  const Tensor out = fn(inputs);
  return gradgradcheck(fn, inputs, randn(out.shape(), gen, 0, 1, DType::Float64), opts);
}

}  // namespace normlab::autograd
