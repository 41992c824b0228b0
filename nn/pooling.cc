// Pooling modules: checked options at construction, PyTorch's reprs, the autograd ops.
#include "nn/pooling.h"

namespace normlab::nn {

namespace {

autograd::Pool2dOptions pool_options(const std::string& who, Size2d kernel, Size2d stride, Size2d padding,
                                     Size2d dilation) {
  if (kernel.h < 1 || kernel.w < 1 || stride.h < 1 || stride.w < 1 || dilation.h < 1 || dilation.w < 1)
    throw Error(who + ": kernel_size, stride and dilation must be at least 1, got kernel_size=" + kernel.str() +
                ", stride=" + stride.str() + ", dilation=" + dilation.str());
  if (padding.h < 0 || padding.w < 0 || padding.h > kernel.h / 2 || padding.w > kernel.w / 2)
    throw Error(who + ": padding must be between 0 and half the kernel size, got padding=" + padding.str() +
                " for kernel_size=" + kernel.str());
  autograd::Pool2dOptions o;
  o.kernel = kernel.pair(), o.stride = stride.pair(), o.padding = padding.pair(), o.dilation = dilation.pair();
  return o;
}

void check_4d(const std::string& who, const Tensor& x) {
  if (x.dim() != 4)
    throw Error(who + ": expected a 4-D input (N, C, H, W), got shape " + autograd::shape_str(x.shape()));
}

}  // namespace

MaxPool2d::MaxPool2d(Size2d kernel_size, std::optional<Size2d> stride, Size2d padding, Size2d dilation)
    : kernel_(kernel_size), stride_(stride.value_or(kernel_size)), padding_(padding), dilation_(dilation) {
  o_ = pool_options("MaxPool2d", kernel_, stride_, padding_, dilation_);
}

Tensor MaxPool2d::forward(const Tensor& x) {
  check_4d(repr(), x);
  return autograd::max_pool2d(x, o_);
}

std::string MaxPool2d::repr() const {
  return "MaxPool2d(kernel_size=" + kernel_.str() + ", stride=" + stride_.str() + ", padding=" + padding_.str() +
         ", dilation=" + dilation_.str() + ", ceil_mode=False)";
}

AvgPool2d::AvgPool2d(Size2d kernel_size, std::optional<Size2d> stride, Size2d padding, bool count_include_pad)
    : kernel_(kernel_size), stride_(stride.value_or(kernel_size)), padding_(padding) {
  o_ = pool_options("AvgPool2d", kernel_, stride_, padding_, 1);
  o_.count_include_pad = count_include_pad;
}

Tensor AvgPool2d::forward(const Tensor& x) {
  check_4d(repr(), x);
  return autograd::avg_pool2d(x, o_);
}

std::string AvgPool2d::repr() const {
  return "AvgPool2d(kernel_size=" + kernel_.str() + ", stride=" + stride_.str() + ", padding=" + padding_.str() + ")";
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Size2d output_size) : size_(output_size) {
  if (size_.h < 1 || size_.w < 1)
    throw Error("AdaptiveAvgPool2d: output_size must be at least 1, got " + size_.str());
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  check_4d(repr(), x);
  return autograd::adaptive_avg_pool2d(x, size_.pair());
}

std::string AdaptiveAvgPool2d::repr() const { return "AdaptiveAvgPool2d(output_size=" + size_.str() + ")"; }

}  // namespace normlab::nn
