// The MLPs of the experiments.
#include "experiments/model.h"

#include <algorithm>

#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/groupnorm.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/rmsnorm.h"

namespace normlab::experiments {

const std::vector<std::string>& norm_names() {
  static const std::vector<std::string> n{"none", "batch", "layer", "group", "rms"};
  return n;
}

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> a{"relu", "tanh", "gelu", "sigmoid"};
  return a;
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}
}  // namespace

void validate(const MlpSpec& s) {
  const auto& norms = norm_names();
  if (std::find(norms.begin(), norms.end(), s.norm) == norms.end())
    throw Error("unknown norm '" + s.norm + "' (expected one of: " + join(norms) + ")");
  const auto& acts = activation_names();
  if (std::find(acts.begin(), acts.end(), s.activation) == acts.end())
    throw Error("unknown activation '" + s.activation + "' (expected one of: " + join(acts) + ")");
  if (s.inputs <= 0 || s.outputs <= 0) throw Error("the model needs at least one input and one output");
  for (int64_t h : s.hidden) {
    if (h <= 0) throw Error("hidden widths must be positive, got " + std::to_string(h));
    if (s.norm == "group" && (s.groups <= 0 || h % s.groups != 0))
      throw Error("GroupNorm with " + std::to_string(s.groups) + " groups needs hidden widths divisible by " +
                  std::to_string(s.groups) + ", got " + std::to_string(h));
  }
}

std::shared_ptr<nn::Sequential> build_mlp(const MlpSpec& s, autograd::Generator& gen) {
  validate(s);
  auto model = std::make_shared<nn::Sequential>();
  int64_t width = s.inputs;
  for (int64_t h : s.hidden) {
    model->add(std::make_shared<nn::Linear>(width, h, gen));
    if (s.norm == "batch") model->add(std::make_shared<nn::BatchNorm1d>(h));
    else if (s.norm == "layer") model->add(std::make_shared<nn::LayerNorm>(autograd::Shape{h}));
    else if (s.norm == "group") model->add(std::make_shared<nn::GroupNorm>(s.groups, h));
    else if (s.norm == "rms") model->add(std::make_shared<nn::RMSNorm>(autograd::Shape{h}));
    if (s.activation == "relu") model->add(std::make_shared<nn::ReLU>());
    else if (s.activation == "tanh") model->add(std::make_shared<nn::Tanh>());
    else if (s.activation == "gelu") model->add(std::make_shared<nn::GELU>());
    else model->add(std::make_shared<nn::Sigmoid>());
    width = h;
  }
  model->add(std::make_shared<nn::Linear>(width, s.outputs, gen));
  return model;
}

std::string describe(const MlpSpec& s) {
  std::string d = std::to_string(s.inputs);
  for (int64_t h : s.hidden) d += "-" + std::to_string(h);
  return d + "-" + std::to_string(s.outputs);
}

}  // namespace normlab::experiments
