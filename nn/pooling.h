// Pooling layers of convolutional networks (PyTorch's nn.MaxPool2d, nn.AvgPool2d,
// nn.AdaptiveAvgPool2d). None has parameters.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "autograd/pooling.h"
#include "nn/module.h"
#include "nn/size2d.h"

namespace normlab::nn {

/// Max over each window; x (N, C, H, W) -> (N, C, OH, OW). stride defaults to kernel_size.
class MaxPool2d : public Module {
 public:
  /// Throws for sizes below 1 or a padding above half the kernel.
  explicit MaxPool2d(Size2d kernel_size, std::optional<Size2d> stride = std::nullopt, Size2d padding = 0,
                     Size2d dilation = 1);
  Tensor forward(const Tensor& x) override;
  /// "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)".
  std::string repr() const override;
  const autograd::Pool2dOptions& options() const { return o_; }  ///< The window as autograd::max_pool2d takes it.

 private:
  Size2d kernel_, stride_, padding_, dilation_;
  autograd::Pool2dOptions o_;
};

/// Mean over each window (padded zeros count unless count_include_pad is false).
class AvgPool2d : public Module {
 public:
  /// Throws for sizes below 1 or a padding above half the kernel.
  explicit AvgPool2d(Size2d kernel_size, std::optional<Size2d> stride = std::nullopt, Size2d padding = 0,
                     bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  /// "AvgPool2d(kernel_size=2, stride=2, padding=0)" (PyTorch does not print count_include_pad).
  std::string repr() const override;

 private:
  Size2d kernel_, stride_, padding_;
  autograd::Pool2dOptions o_;
};

/// Averages into a fixed output size; output_size 1 is global average pooling.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2d output_size);  ///< (OH, OW), each >= 1.
  Tensor forward(const Tensor& x) override;
  /// "AdaptiveAvgPool2d(output_size=1)" or "AdaptiveAvgPool2d(output_size=(2, 3))".
  std::string repr() const override;

 private:
  Size2d size_;
};

}  // namespace normlab::nn
