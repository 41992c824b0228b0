// What model a run trains, as the command line, the records and the checkpoints give it: a
// classifier's arch, sizes, norm and activation (ModelSpec), or a character language model's
// (CharModelSpec); models/ builds them (models/model.h and archs.h, models/char_model.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/char_lstm.h"
#include "nn/gpt.h"

namespace normlab::experiments {

// The study's CNN (--arch cnn without --model): conv3x3(C -> 32, padding 1) - norm - activation -
// maxpool 2 - conv3x3(32 -> 64, padding 1) - norm - activation - maxpool 2, then flatten and the
// classifier Linear (3136 -> 10 on 1x28x28 images).
inline constexpr const char* kDefaultCnn = "conv32k3p1-norm-act-maxpool2-conv64k3p1-norm-act-maxpool2";

// The grammar of a layer string (--model), tokens joined by '-':
//   conv<C>[k<K>|k<KH>x<KW>][s<S>][p<P>][d<D>][g<G>]  Conv2d to C channels (kernel 3, stride 1,
//                                                     padding 0, dilation 1, groups 1 by default)
//   maxpool<K>[s<S>][p<P>], avgpool<K>[s<S>][p<P>]     pooling (stride = kernel by default)
//   gap                                               global average pooling (AdaptiveAvgPool2d(1))
//   flatten                                           (C, H, W) -> C H W features
//   linear<N>                                         a hidden Linear to N features (after flatten)
//   norm                                              the norm of --norm/--norms (none: nothing)
//   act, relu, tanh, gelu, sigmoid                    the activation of --activation, or that one
// The classifier Linear to the number of classes is appended (after a flatten if needed).
struct ModelSpec {
  std::string arch = "mlp";         // a registered arch: "mlp" or "cnn"
  int64_t inputs = 0;               // features per sample (from the data)
  std::vector<int64_t> hidden;      // mlp: widths of the hidden layers
  std::vector<int64_t> image;       // cnn: one sample as (C, H, W); C H W must equal inputs
  std::string layers = kDefaultCnn; // cnn: the layer string
  int64_t outputs = 0;
  std::string activation = "relu";  // a registered activation
  std::string norm = "none";        // a registered norm
  int64_t groups = 8;               // GroupNorm's num_groups (must divide every normalized width)
};

// "1x28x28": an image shape as the descriptions and checkpoints write it.
std::string shape_text(const std::vector<int64_t>& shape);

// A character language model: a GPT (--arch gpt) or a CharLSTM (--arch lstm on --dataset text).
struct CharModelSpec {
  std::string arch = "gpt";  // "gpt" or "lstm"
  nn::GPTConfig gpt;         // arch gpt (its vocab_size and block_size are the ones below)
  nn::CharLSTMConfig lstm;   // arch lstm (its vocab_size is the one below)
  int64_t vocab_size = 0;    // V
  int64_t block_size = 0;    // T, the window of training and evaluation (a GPT's positions)
};

}  // namespace normlab::experiments
