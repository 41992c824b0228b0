// Differentiable 2-D pooling over NCHW activations (PyTorch's max_pool2d, avg_pool2d,
// adaptive_avg_pool2d). Every (n, c) plane is pooled on its own.
#pragma once
#include <array>
#include <cstdint>

#include "autograd/tensor.h"

namespace normlab::autograd {

/// A pooling window, (height, width) pairs. stride {0, 0} means "the kernel size" (PyTorch's
/// stride=None). Padding may be at most half the kernel.
struct Pool2dOptions {
  std::array<int64_t, 2> kernel{1, 1};  ///< window size, >= 1
  std::array<int64_t, 2> stride{0, 0};  ///< step between windows; {0, 0}: the kernel size
  std::array<int64_t, 2> padding{0, 0};  ///< implicit padding on both sides
  std::array<int64_t, 2> dilation{1, 1};  ///< max_pool2d only
  bool count_include_pad = true;          ///< avg_pool2d only: padded zeros count in the divisor
};

/// y[n, c, y, x] = max over the window of x[n, c, ...] (padding is -inf, never chosen). x is
/// (N, C, H, W); returns (N, C, OH, OW) with OH = floor((H + 2 p - d (k - 1) - 1) / s) + 1.
/// Backward sends each output's gradient to one input: the first maximum in the window's row-major
/// scan; a NaN in the window is the maximum (the last NaN), as PyTorch's CPU kernel.
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o);

/// y[n, c, y, x] = (sum of x over the window) / divisor, where the divisor is kH * kW with
/// count_include_pad, else the number of window positions inside the image. x is (N, C, H, W).
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o);

/// Output (N, C, OH, OW): y[n, c, i, j] = mean of x[n, c, h0:h1, w0:w1] with h0 = floor(i H / OH),
/// h1 = ceil((i + 1) H / OH) (w alike), as PyTorch. {1, 1} is the global average.
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);

}  // namespace normlab::autograd
