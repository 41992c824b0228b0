// Conv2d: the 2-D convolution layer (PyTorch's nn.Conv2d, with its default init), NCHW activations
// and an OIHW weight, so that checkpoints load in PyTorch as they are.
#pragma once
#include <cstdint>
#include <string>

#include "nn/module.h"
#include "nn/size2d.h"

namespace normlab::nn {

/// Conv2d's options, PyTorch's names and defaults.
struct Conv2dOptions {
  Size2d stride = 1;  ///< step of the window
  Size2d padding = 0;  ///< zeros on both sides
  Size2d dilation = 1;  ///< spacing of the kernel taps
  int64_t groups = 1;  ///< divides in_channels and out_channels
  bool bias = true;  ///< whether there is a bias
};

/// 2-D convolution, PyTorch's nn.Conv2d: x (N, C, H, W) -> (N, O, OH, OW).
class Conv2d : public Module {
 public:
  /// A layer of in_channels -> out_channels with PyTorch's default init drawn from gen.
  /// weight (out_channels, in_channels / groups, kH, kW) and bias (out_channels), drawn from gen as
  /// PyTorch does: both U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels / groups * kH * kW
  /// (the weight by kaiming_uniform_ with a = sqrt(5)). Float32; convert with to(DType::Float64).
  /// Throws for sizes below 1, a negative padding, or groups that do not divide both channel counts.
  Conv2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size, Generator& gen, const Conv2dOptions& o = {});

  /// x (N, in_channels, H, W) -> (N, out_channels, OH, OW), OH = floor((H + 2 padding - dilation
  /// (kH - 1) - 1) / stride) + 1 (OW alike).
  Tensor forward(const Tensor& x) override;
  /// "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))", as PyTorch prints it.
  std::string repr() const override;

  int64_t in_channels() const { return in_channels_; }  ///< C, the input channels.
  int64_t out_channels() const { return out_channels_; }  ///< O, the output channels.
  Size2d kernel_size() const { return kernel_; }  ///< (kH, kW).
  const Conv2dOptions& options() const { return o_; }  ///< The options given.
  /// The output size for an input of h x w, or a normlab::Error naming the layer if it does not fit.
  std::array<int64_t, 2> output_size(int64_t h, int64_t w) const;
  const Tensor& weight() const { return weight_; }  ///< The kernels, (O, C / groups, kH, kW).
  /// Undefined without bias.
  const Tensor& bias() const { return bias_; }

 private:
  int64_t in_channels_, out_channels_;
  Size2d kernel_;
  Conv2dOptions o_;
  Tensor weight_, bias_;
};

}  // namespace normlab::nn
