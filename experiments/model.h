// The MLPs of the experiments: Linear -> Norm -> activation in every hidden layer, a plain Linear
// for the logits (never normalized).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/sequential.h"

namespace normlab::experiments {

// The norms an experiment can place in hidden layers.
const std::vector<std::string>& norm_names();        // none, batch, layer, group, rms
const std::vector<std::string>& activation_names();  // relu, tanh, gelu, sigmoid

struct MlpSpec {
  int64_t inputs = 0;
  std::vector<int64_t> hidden;  // widths of the hidden layers
  int64_t outputs = 0;
  std::string activation = "relu";
  std::string norm = "none";
  int64_t groups = 8;  // GroupNorm's num_groups (must divide every hidden width)
};

// Throws normlab::Error for an unknown norm or activation, or widths that do not fit the norm.
void validate(const MlpSpec& spec);
// Builds the model with PyTorch's default initialization drawn from gen.
std::shared_ptr<nn::Sequential> build_mlp(const MlpSpec& spec, autograd::Generator& gen);
// "784-256-256-10".
std::string describe(const MlpSpec& spec);

}  // namespace normlab::experiments
