// The MLPs of the experiments: Linear -> norm -> activation in every hidden layer, a plain Linear
// for the logits (never normalized). Norms and activations come from the registry.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/sequential.h"

namespace normlab::experiments {

struct MlpSpec {
  int64_t inputs = 0;
  std::vector<int64_t> hidden;  // widths of the hidden layers
  int64_t outputs = 0;
  std::string activation = "relu";  // a registered activation
  std::string norm = "none";        // a registered norm
  int64_t groups = 8;               // GroupNorm's num_groups (must divide every hidden width)
};

// Where a hidden layer's activations can be observed: after its Linear ("pre"), after its norm
// ("post"; without a norm the Linear's output is both), after its activation ("act").
struct Probe {
  std::shared_ptr<nn::Module> module;
  int layer;                       // hidden layer, from 0
  std::vector<std::string> where;  // the labels its output is recorded under, in order
};

// A built model, with what the experiments observe in it.
struct Model {
  std::shared_ptr<nn::Sequential> net;
  std::vector<Probe> probes;  // in forward order
  // The weight of every Linear, in order (the output layer last), with its state_dict name.
  std::vector<std::pair<std::string, autograd::Tensor>> weights;
};

// Throws normlab::Error for an unknown norm or activation, or widths that do not fit the norm.
void validate(const MlpSpec& spec);
// Builds the model with PyTorch's default initialization drawn from gen.
Model build_mlp(const MlpSpec& spec, autograd::Generator& gen);
// "784-256-256-10".
std::string describe(const MlpSpec& spec);
// What a checkpoint records to rebuild the model: sizes, norm (and its options), activation.
std::map<std::string, std::string> checkpoint_metadata(const MlpSpec& spec);

}  // namespace normlab::experiments
