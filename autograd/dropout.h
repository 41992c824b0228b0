// Dropout as a differentiable op (nn::Dropout wraps it in a module with its own generator).
#pragma once
#include <string>

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace normlab::autograd {

/// x: (*) -> (*). y = x * m, m_i = 1/(1-p) with probability 1-p, else 0 (all 0 when p = 1);
/// dy/dx = m, so the gradient flows through the same mask. The mask is drawn from gen, one uniform
/// per element in row-major order (element i is kept when u_i >= p). p must be in [0, 1].
Tensor dropout(const Tensor& x, double p, Generator& gen);

/// Checks a dropout probability: in [0, 1], NaN refused; otherwise a normlab::Error that starts
/// with who (the op or module), in PyTorch's words.
void check_dropout_p(double p, const std::string& who);

}  // namespace normlab::autograd
