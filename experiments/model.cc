// The MLPs of the experiments, assembled from registry entries.
#include "experiments/model.h"

#include "autograd/error.h"
#include "experiments/registry.h"
#include "nn/linear.h"

namespace normlab::experiments {

void validate(const MlpSpec& s) {
  const NormEntry& norm = experiments::norm(s.norm);
  activation(s.activation);  // throws for an unknown name
  if (s.inputs <= 0 || s.outputs <= 0) throw Error("the model needs at least one input and one output");
  for (int64_t h : s.hidden) {
    if (h <= 0) throw Error("hidden widths must be positive, got " + std::to_string(h));
    if (norm.check) norm.check({.features = h, .groups = s.groups});
  }
}

Model build_mlp(const MlpSpec& s, autograd::Generator& gen) {
  validate(s);
  const NormEntry& norm = experiments::norm(s.norm);
  const ActivationEntry& act = activation(s.activation);
  Model m;
  m.net = std::make_shared<nn::Sequential>();
  nn::Sequential& net = *m.net;
  auto add_linear = [&](int64_t in, int64_t out) {
    const std::string name = std::to_string(net.size()) + ".weight";
    auto fc = net.add(std::make_shared<nn::Linear>(in, out, gen));
    m.weights.emplace_back(name, fc->weight());
    return fc;
  };
  int64_t width = s.inputs;
  for (size_t l = 0; l < s.hidden.size(); ++l) {
    const int64_t h = s.hidden[l];
    const int layer = static_cast<int>(l);
    auto fc = add_linear(width, h);
    if (norm.is_identity()) {
      m.probes.push_back({fc, layer, {"pre", "post"}});
    } else {
      m.probes.push_back({fc, layer, {"pre"}});
      m.probes.push_back({net.add(norm.make({.features = h, .groups = s.groups})), layer, {"post"}});
    }
    m.probes.push_back({net.add(act.make()), layer, {"act"}});
    width = h;
  }
  add_linear(width, s.outputs);
  return m;
}

std::string describe(const MlpSpec& s) {
  std::string d = std::to_string(s.inputs);
  for (int64_t h : s.hidden) d += "-" + std::to_string(h);
  return d + "-" + std::to_string(s.outputs);
}

std::map<std::string, std::string> checkpoint_metadata(const MlpSpec& s) {
  std::map<std::string, std::string> md{{"model", describe(s)}, {"norm", s.norm}, {"activation", s.activation}};
  const NormEntry& norm = experiments::norm(s.norm);
  if (norm.metadata && !s.hidden.empty())
    for (const auto& [k, v] : norm.metadata({.features = s.hidden.front(), .groups = s.groups}))
      md["norm." + k] = v;
  return md;
}

}  // namespace normlab::experiments
