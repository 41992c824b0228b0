// Conv2d: parameter setup with PyTorch's default init, checked options, the autograd::conv2d op.
#include "nn/conv.h"

#include <cmath>

#include "autograd/conv.h"
#include "nn/init.h"

namespace normlab::nn {

using autograd::dtype_name;
using autograd::shape_str;

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, Generator& gen, const Conv2dOptions& o)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_(kernel_size), o_(o) {
  const std::string who = "Conv2d(" + std::to_string(in_channels) + ", " + std::to_string(out_channels) + ")";
  if (in_channels < 1 || out_channels < 1)
    throw Error(who + ": in_channels and out_channels must be at least 1");
  if (kernel_.h < 1 || kernel_.w < 1 || o.stride.h < 1 || o.stride.w < 1 || o.dilation.h < 1 || o.dilation.w < 1)
    throw Error(who + ": kernel_size, stride and dilation must be at least 1, got kernel_size=" + kernel_.tuple() +
                ", stride=" + o.stride.tuple() + ", dilation=" + o.dilation.tuple());
  if (o.padding.h < 0 || o.padding.w < 0)
    throw Error(who + ": padding must be at least 0, got padding=" + o.padding.tuple());
  if (o.groups < 1 || in_channels % o.groups != 0 || out_channels % o.groups != 0)
    throw Error(who + ": groups must be at least 1 and divide in_channels and out_channels, got groups=" +
                std::to_string(o.groups));
  weight_ = register_parameter("weight", autograd::empty({out_channels, in_channels / o.groups, kernel_.h, kernel_.w}));
  // PyTorch's reset_parameters(): kaiming_uniform_(W, a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  init::kaiming_uniform_(weight_, gen, std::sqrt(5.0));
  if (o.bias) {
    const double fan_in = static_cast<double>(in_channels / o.groups * kernel_.h * kernel_.w);
    const double bound = 1 / std::sqrt(fan_in);
    bias_ = register_parameter("bias", autograd::empty({out_channels}));
    init::uniform_(bias_, -bound, bound, gen);
  }
}

std::array<int64_t, 2> Conv2d::output_size(int64_t h, int64_t w) const {
  const std::string who = repr() + " on an input of " + std::to_string(h) + "x" + std::to_string(w);
  return {autograd::conv_output_size(who + " (height)", h, kernel_.h, o_.stride.h, o_.padding.h, o_.dilation.h),
          autograd::conv_output_size(who + " (width)", w, kernel_.w, o_.stride.w, o_.padding.w, o_.dilation.w)};
}

Tensor Conv2d::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(1) != in_channels_)
    throw Error(repr() + ": expected input of shape (N, " + std::to_string(in_channels_) + ", H, W), got " +
                shape_str(x.shape()));
  if (x.dtype() != weight_.dtype())
    throw Error("Conv2d: the input is " + dtype_name(x.dtype()) + " but the parameters are " +
                dtype_name(weight_.dtype()));
  output_size(x.size(2), x.size(3));  // a window that does not fit: an error naming this layer
  autograd::Conv2dOptions c;
  c.stride = o_.stride.pair(), c.padding = o_.padding.pair(), c.dilation = o_.dilation.pair(), c.groups = o_.groups;
  return autograd::conv2d(x, weight_, bias_, c);
}

std::string Conv2d::repr() const {
  std::string r = "Conv2d(" + std::to_string(in_channels_) + ", " + std::to_string(out_channels_) +
                  ", kernel_size=" + kernel_.tuple() + ", stride=" + o_.stride.tuple();
  if (o_.padding != Size2d(0)) r += ", padding=" + o_.padding.tuple();
  if (o_.dilation != Size2d(1)) r += ", dilation=" + o_.dilation.tuple();
  if (o_.groups != 1) r += ", groups=" + std::to_string(o_.groups);
  if (!bias_.defined()) r += ", bias=False";
  return r + ")";
}

}  // namespace normlab::nn
