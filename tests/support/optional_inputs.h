// Test helpers for ops with optional (undefined) inputs, such as the fused LSTM recurrences' h0, c0
// and bias: the defined ones, the output and gradients as flat vectors, and the op over the defined
// inputs alone for gradcheck.
#pragma once
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "autograd/autograd.h"

namespace normlab::test {

using OpOfInputs = std::function<autograd::Tensor(const std::vector<autograd::Tensor>&)>;

// The defined tensors of x, in order (the ones a gradient is asked for).
inline std::vector<autograd::Tensor> defined_of(const std::vector<autograd::Tensor>& x) {
  std::vector<autograd::Tensor> r;
  for (const autograd::Tensor& t : x)
    if (t.defined()) r.push_back(t);
  return r;
}

// f's output at x, then its gradients with respect to x's defined inputs for the cotangent gout,
// each as a flat vector.
inline std::vector<std::vector<double>> output_and_grads(const OpOfInputs& f, const std::vector<autograd::Tensor>& x,
                                                         const autograd::Tensor& gout) {
  const autograd::Tensor out = f(x);
  std::vector<std::vector<double>> r{out.to_vector()};
  for (const autograd::Tensor& t : autograd::grad({out}, defined_of(x), {gout})) r.push_back(t.to_vector());
  return r;
}

// f over the defined inputs of `like` only (for gradcheck, which perturbs every input it gets): the
// undefined ones stay undefined.
inline autograd::GradcheckFn over_defined(OpOfInputs f, std::vector<autograd::Tensor> like) {
  return [f = std::move(f), like = std::move(like)](const std::vector<autograd::Tensor>& d) {
    std::vector<autograd::Tensor> x = like;
    size_t k = 0;
    for (autograd::Tensor& t : x)
      if (t.defined()) t = d[k++];
    return f(x);
  };
}

}  // namespace normlab::test
