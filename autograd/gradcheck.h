// gradcheck: compares the autograd Jacobian of any function of tensors with central differences in
// float64, with PyTorch's definition and defaults.
#pragma once
#include <functional>
#include <string>
#include <vector>

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

}  // namespace normlab::autograd
