// Training states: the step and scalars as exact strings in the metadata of a safetensors file.
#include "serialize/training_state.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace normlab::serialize {

namespace {

const char* const kKindKey = "normlab.kind";
const char* const kKindTraining = "training_state";
const char* const kStepKey = "step";
const std::string kScalarPrefix = "scalar.";

std::string quote(const std::string& s) { return "'" + s + "'"; }

// A double printed with 17 significant digits: strtod reads back the same bits.
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Parses the whole of s as a double (strtod also accepts "inf" and "nan").
bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);  // no ERANGE check: subnormals are valid values
  return end == s.c_str() + s.size();
}

// Parses the whole of s as a signed 64-bit integer.
bool parse_int64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size() || errno == ERANGE) return false;
  *out = v;
  return true;
}

}  // namespace

void save_training_state(const std::string& path, const NamedTensors& optimizer_tensors,
                         const std::map<std::string, double>& scalars, int64_t step,
                         const std::map<std::string, std::string>& metadata) {
  for (const auto& [k, v] : metadata)
    if (k == kKindKey || k == kStepKey || k.rfind(kScalarPrefix, 0) == 0)
      throw Error("save_training_state " + quote(path) + ": the metadata key " + quote(k) +
                  " is reserved (normlab.kind, step and scalar.* hold the training state)");
  std::map<std::string, std::string> meta = metadata;
  meta[kKindKey] = kKindTraining;
  meta[kStepKey] = std::to_string(step);
  for (const auto& [name, v] : scalars) meta[kScalarPrefix + name] = exact(v);
  save_safetensors(path, optimizer_tensors, meta);
}

TrainingState load_training_state(const std::string& path) {
  auto fail = [&](const std::string& problem) {
    throw Error("load_training_state " + quote(path) + ": " + problem);
  };
  SafetensorsFile file = load_safetensors(path);
  auto kind = file.metadata.find(kKindKey);
  if (kind == file.metadata.end() || kind->second != kKindTraining)
    fail("not a training state (its metadata has no \"normlab.kind\": \"training_state\"; "
         "a model checkpoint is read with load_module)");
  TrainingState state;
  state.optimizer_tensors = std::move(file.tensors);
  for (const auto& [k, v] : file.metadata) {
    if (k == kKindKey) continue;
    if (k == kStepKey) {
      if (!parse_int64(v, &state.step)) fail("the step must be an integer, got " + quote(v));
    } else if (k.rfind(kScalarPrefix, 0) == 0) {
      double d;
      if (!parse_double(v, &d)) fail("scalar " + quote(k.substr(kScalarPrefix.size())) +
                                     " must be a number, got " + quote(v));
      state.scalars[k.substr(kScalarPrefix.size())] = d;
    } else {
      state.metadata[k] = v;
    }
  }
  if (!file.metadata.count(kStepKey)) fail("the metadata has no \"step\"");
  return state;
}

}  // namespace normlab::serialize
