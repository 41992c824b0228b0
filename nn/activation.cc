// Activation modules: each forward is one autograd op (whose backward sits beside it in autograd).
#include "nn/activation.h"

namespace normlab::nn {

Tensor ReLU::forward(const Tensor& x) { return autograd::relu(x); }
Tensor Tanh::forward(const Tensor& x) { return autograd::tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return autograd::sigmoid(x); }
Tensor GELU::forward(const Tensor& x) { return autograd::gelu(x); }

}  // namespace normlab::nn
