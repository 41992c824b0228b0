// Differentiable 2-D convolution (PyTorch's torch.nn.functional.conv2d), NCHW activations and OIHW
// weights.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// (height, width) pairs, as PyTorch's int-or-tuple arguments.
struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1};    ///< >= 1
  std::array<int64_t, 2> padding{0, 0};   ///< >= 0, zeros on both sides
  std::array<int64_t, 2> dilation{1, 1};  ///< >= 1
  int64_t groups = 1;                     ///< >= 1, divides both channel counts
};

/// 2-D convolution (a cross-correlation) of NCHW x with OIHW weights, PyTorch's F.conv2d.
/// y = conv2d(x, w, b): x (N, C, H, W), w (O, C / groups, kH, kW), b (O) or undefined; returns
/// (N, O, OH, OW) with OH = floor((H + 2 padding - dilation (kH - 1) - 1) / stride) + 1 (OW alike):
///   y[n, o, y, x] = b[o] + sum_{c in o's group, i, j} w[o, c, i, j] x[n, c, y s - p + i d, x s - p + j d]
/// (a cross-correlation, as in PyTorch; positions in the padding read 0). Wrong ranks, channel
/// counts, sizes or options are an error that names the shapes.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const Conv2dOptions& o = {});

/// The output size of a convolution or pooling window along one dim (the formula above), or a
/// normlab::Error naming `who` when the window does not fit the padded input.
int64_t conv_output_size(const std::string& who, int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                         int64_t dilation);

}  // namespace normlab::autograd
