// Model checkpoints: module state_dicts written and read as safetensors files.
#include "nn/checkpoint.h"

namespace normlab::nn {

void save_module(const std::string& path, const Module& m,
                 const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");  // kept if the caller set "format"
  serialize::save_safetensors(path, m.state_dict(), meta);
}

void load_module(const std::string& path, Module& m) {
  // load_safetensors validates the whole file first; load_state_dict checks every name and shape
  // before it copies anything. Either failing leaves m as it was.
  load_module(serialize::load_safetensors(path), path, m);
}

void load_module(const serialize::SafetensorsFile& file, const std::string& path, Module& m) {
  try {
    m.load_state_dict(file.tensors);
  } catch (const Error& e) {
    throw Error(path + ": its weights do not fit the model: " + e.what());
  }
}

}  // namespace normlab::nn
