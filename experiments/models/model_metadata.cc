// The model side of a checkpoint's metadata (model.h): what a model.safetensors records to
// rebuild its model, reading it back, and the checks of a checkpoint against its own metadata
// (an edited "model" field, weights that are not finite).
#include "experiments/models/model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "experiments/models/archs.h"
#include "experiments/registry/entries.h"
#include "experiments/registry/layers.h"

namespace normlab::experiments {

std::map<std::string, std::string> checkpoint_metadata(const ModelSpec& s) {
  const ArchEntry& a = arch(s.arch);
  std::map<std::string, std::string> md{{"model", describe(s)},         {"norm", s.norm},
                                        {"activation", s.activation},   {"arch", s.arch},
                                        {"inputs", std::to_string(s.inputs)}, {"outputs", std::to_string(s.outputs)}};
  if (a.metadata) md.merge(a.metadata(s));
  const NormEntry& norm = experiments::norm(s.norm);
  if (norm.metadata && (a.image || !s.hidden.empty())) {  // the first normalized width
    const int64_t width = a.image ? s.image.at(0) : s.hidden.front();
    for (const auto& [k, v] : norm.metadata({.features = width, .groups = s.groups, .shape = {width}}))
      md["norm." + k] = v;
  }
  return md;
}

ModelSpec model_spec_from_metadata(const std::map<std::string, std::string>& md, const std::string& file) {
  const auto get = [&](const std::string& key) {
    const auto it = md.find(key);
    if (it == md.end())
      throw Error(file + ": the checkpoint's metadata has no \"" + key + "\" (expected a model.safetensors that "
                  "`normlab train` wrote)");
    return it->second;
  };
  const auto whole = [&](const std::string& key, const std::string& text) {
    try {
      size_t used = 0;
      const long long v = std::stoll(text, &used);
      if (used == text.size() && v >= 0) return static_cast<int64_t>(v);
    } catch (const std::exception&) {
    }
    throw Error(file + ": metadata \"" + key + "\" is \"" + text + "\", expected a whole number");
  };
  const auto list = [&](const std::string& key, const std::string& text, char sep) {
    std::vector<int64_t> v;
    std::string cur;
    for (char c : text + sep)
      if (c == sep) v.push_back(whole(key, cur)), cur.clear();
      else cur += c;
    return v;
  };
  ModelSpec s;
  s.arch = get("arch");
  s.inputs = whole("inputs", get("inputs"));
  s.outputs = whole("outputs", get("outputs"));
  s.norm = get("norm");
  s.activation = get("activation");
  if (std::none_of(norms().begin(), norms().end(), [&](const NormEntry& e) { return e.name == s.norm; }))
    throw Error(file + ": metadata \"norm\" is \"" + s.norm + "\", expected one of: " + norm_names());
  if (std::none_of(activations().begin(), activations().end(), [&](const ActivationEntry& e) { return e.name == s.activation; }))
    throw Error(file + ": metadata \"activation\" is \"" + s.activation + "\", expected one of: " + activation_names());
  if (md.count("norm.num_groups")) s.groups = whole("norm.num_groups", md.at("norm.num_groups"));
  const auto found = std::find_if(archs().begin(), archs().end(), [&](const ArchEntry& a) { return a.name == s.arch; });
  if (found == archs().end())
    throw Error(file + ": metadata \"arch\" is \"" + s.arch + "\", expected one of: " + arch_names());
  if (found->read_metadata) found->read_metadata(s, get, list);
  return s;
}

namespace {

// The spec a "model" field describes ("2-32-32-2"; "1x28x28-<layers>-10"), the rest as in s.
ModelSpec described_spec(ModelSpec s, const std::string& model) {
  std::vector<std::string> parts{""};
  for (char c : model)
    if (c == '-') parts.emplace_back();
    else parts.back() += c;
  const auto whole = [](const std::string& t) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos)
      throw Error("not a whole number: '" + t + "'");
    return static_cast<int64_t>(std::stoll(t));
  };
  if (parts.size() < 2) throw Error("too few parts");
  s.outputs = whole(parts.back());
  if (arch(s.arch).image) {
    s.image.clear();
    std::string dim;
    for (char c : parts.front() + "x")
      if (c == 'x') s.image.push_back(whole(dim)), dim.clear();
      else dim += c;
    s.inputs = s.image.size() == 3 ? s.image[0] * s.image[1] * s.image[2] : 0;
    s.layers.clear();
    for (size_t i = 1; i + 1 < parts.size(); ++i) s.layers += (i > 1 ? "-" : "") + parts[i];
  } else {
    s.inputs = whole(parts.front());
    s.hidden.clear();
    for (size_t i = 1; i + 1 < parts.size(); ++i) s.hidden.push_back(whole(parts[i]));
  }
  return s;
}

std::string shape_of(const autograd::Tensor& t) {
  std::string r = "[";
  for (size_t i = 0; i < t.shape().size(); ++i) r += (i ? ", " : "") + std::to_string(t.shape()[i]);
  return r + "]";
}

// A "model" field other than the model the rest of the metadata builds: an error naming a tensor
// of the described model whose shape differs from the file's and both shapes, or, when the
// tensors are those of the described model, the model the other metadata would build.
void check_model_field(const std::map<std::string, std::string>& md, const ModelSpec& s,
                       const autograd::NamedTensors& tensors, const std::string& file) {
  const auto it = md.find("model");
  if (it == md.end() || it->second == describe(s)) return;
  const std::string head = file + ": metadata \"model\" is \"" + it->second + "\"";
  std::string mismatch = ", which describes no model normlab builds";
  try {
    autograd::Generator gen(0);
    mismatch.clear();
    for (const auto& [name, want] : build_model(described_spec(s, it->second), gen).net->state_dict()) {
      const std::string& wanted = name;  // clang 14 cannot capture a structured binding
      const auto got = std::find_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.first == wanted; });
      if (got == tensors.end()) mismatch = ", but the file has no tensor " + name + " (" + shape_of(want) + ") of that model";
      else if (got->second.shape() != want.shape())
        mismatch = ", but the file's tensor " + name + " is " + shape_of(got->second) + " where that model's is " + shape_of(want);
      if (!mismatch.empty()) break;
    }
  } catch (const Error&) {
  }
  if (!mismatch.empty()) throw Error(head + mismatch + " (an edited checkpoint?)");
  throw Error(head + ", as its tensors are, but the other metadata (inputs, outputs, hidden or layers and image_shape) "
              "describe a " + describe(s) + " model (an edited checkpoint?)");
}

}  // namespace

void check_checkpoint_tensors(const std::map<std::string, std::string>& md, const ModelSpec& s,
                              const autograd::NamedTensors& tensors, const std::string& file) {
  try {
    validate(s);
  } catch (const Error& e) {
    throw Error(file + ": the checkpoint's metadata describes no model normlab builds: " + e.what());
  }
  check_model_field(md, s, tensors, file);
  check_finite_tensors(tensors, file);
}

void check_finite_tensors(const autograd::NamedTensors& tensors, const std::string& file) {
  for (const auto& [name, t] : tensors)
    for (int64_t i = 0; i < t.numel(); ++i)
      if (const double v = t.flat(i); !std::isfinite(v))
        throw Error(file + ": the tensor " + name + " holds " + (std::isnan(v) ? "NaN" : "an infinite value") +
                    " (element " + std::to_string(i) + " of " + std::to_string(t.numel()) +
                    "): the weights cannot give predictions (a run that diverged, or a damaged file)");
}

}  // namespace normlab::experiments
