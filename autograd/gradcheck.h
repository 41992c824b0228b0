// gradcheck and gradgradcheck: compare the autograd Jacobian of any function of tensors, and the
// Jacobian of its vector-Jacobian product, with central differences in float64, with PyTorch's
// definitions and defaults.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace normlab::autograd {

/// The tolerances and behaviour of gradcheck, PyTorch's defaults.
struct GradcheckOptions {
  double eps = 1e-6;    ///< finite-difference step
  double atol = 1e-5;   ///< pass when |analytic - numeric| <= atol + rtol |numeric|
  double rtol = 1e-3;  ///< relative tolerance (see atol)
  bool raise_exception = true;  ///< throw normlab::Error on a mismatch (else return false)
};

/// The function under test: tensors in, one tensor out.
using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Checks d fn / d input for every input that requires grad (all inputs must be float64). Entry
/// (j, k) of each Jacobian is d out[j] / d input[k]: the analytic one from one backward pass per
/// output element, the numeric one as (fn(x + eps e_k) - fn(x - eps e_k)) / (2 eps). On a mismatch
/// the message names the input, the element and both values. The inputs' .grad are left as they were.
bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& opts = {});

/// Checks the second derivatives of fn, as torch.autograd.gradgradcheck: with a gradient v of
/// fn's output (grad_outputs; when undefined, a float64 standard normal draw from gen, as PyTorch
/// draws one at random), the vector-Jacobian product
///   vjp(inputs, v) = autograd::grad(fn(inputs), inputs that require grad, v, create_graph)
/// is itself gradchecked with respect to the inputs and v: its analytic Jacobian comes from a
/// backward through the create_graph gradients, its numeric one from central differences of the
/// vjp. The vjp's gradients are joined into one vector; an input fn does not use gets zeros.
bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const Tensor& grad_outputs = Tensor(),
                   const GradcheckOptions& opts = {});
/// The same with v drawn from gen (for several checks with different draws).
bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, Generator& gen,
                   const GradcheckOptions& opts = {});

}  // namespace normlab::autograd
