// Test helpers for safetensors files: PyTorch parity fixtures (tests/fixtures/*.safetensors, made
// by scripts/make_fixtures.py) loaded by name, with tensors fetched by name and a clear error when
// one is absent; safetensors bytes built by hand, to make corrupt files. (A temporary directory and
// whole-file reads and writes: tests/support/files.h.)
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "serialize/safetensors.h"

#ifndef NORMLAB_SOURCE_DIR
#error "NORMLAB_SOURCE_DIR must be defined (tests/CMakeLists.txt defines it for test executables)"
#endif

namespace normlab::test {

// One fixture file: Fixture("layernorm") reads tests/fixtures/layernorm.safetensors.
class Fixture {
 public:
  explicit Fixture(const std::string& name)
      : name_(name), file_(serialize::load_safetensors(path(name))) {
    for (auto& [n, t] : file_.tensors) index_.emplace(n, t);
  }

  // The file of a fixture: NORMLAB_SOURCE_DIR/tests/fixtures/<name>.safetensors.
  static std::string path(const std::string& name) {
    return std::string(NORMLAB_SOURCE_DIR) + "/tests/fixtures/" + name + ".safetensors";
  }

  // True if the fixture has a tensor of this name.
  bool has(const std::string& tensor) const { return index_.count(tensor) > 0; }
  // The fixture's name: "lstm" for tests/fixtures/lstm.safetensors.
  const std::string& name() const { return name_; }

  // The tensor of this name (float32/float64 as stored; I64/I32 entries as float64); throws a
  // normlab::Error naming the fixture, the tensor and a few names that do exist if it is absent.
  autograd::Tensor get(const std::string& tensor) const {
    auto it = index_.find(tensor);
    if (it != index_.end()) return it->second;
    std::string msg = "fixture '" + name_ + "' has no tensor '" + tensor + "'";
    // Suggest the names sharing the longest prefix (typos are usually at the end).
    size_t best = 0;
    for (auto& [n, t] : index_) best = std::max(best, common_prefix(n, tensor));
    std::string near;
    int shown = 0;
    for (auto& [n, t] : index_)
      if (common_prefix(n, tensor) == best && shown++ < 8) near += (near.empty() ? "" : ", ") + n;
    throw Error(msg + " (" + std::to_string(index_.size()) + " tensors; closest: " + near +
                "); regenerate with /usr/bin/python3 scripts/make_fixtures.py");
  }

  // A metadata string (e.g. "two_dims_affine.normalized_shape"); throws if absent.
  const std::string& meta(const std::string& key) const {
    auto it = file_.metadata.find(key);
    if (it == file_.metadata.end())
      throw Error("fixture '" + name_ + "' has no metadata key '" + key + "'");
    return it->second;
  }

  const serialize::NamedTensors& tensors() const { return file_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return file_.metadata; }

 private:
  static size_t common_prefix(const std::string& a, const std::string& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
  }
  std::string name_;
  serialize::SafetensorsFile file_;
  std::map<std::string, autograd::Tensor> index_;
};

// A safetensors file built by hand: the 8-byte little-endian length, the header text, the data.
inline std::string st_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// A safetensors file's bytes with its header text replaced by `header` (padded with spaces to a
// multiple of 8, as writers pad it) and its data area kept.
inline std::string with_header(const std::string& bytes, const std::string& header) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes.at(i));
  return st_file(header + std::string((8 - header.size() % 8) % 8, ' '), bytes.substr(8 + n));
}

// A safetensors file's bytes with the 8-byte header length set to n (header and data kept).
inline std::string with_header_length(const std::string& bytes, uint64_t n) {
  std::string out = bytes;
  for (int i = 0; i < 8; ++i) out.at(i) = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

}  // namespace normlab::test
