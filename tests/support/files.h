// Test helpers for files: a fresh temporary directory removed (with everything in it) at the end
// of its scope, and reading or writing a whole file.
#pragma once
#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "base/error.h"

namespace normlab::test {

// A fresh, empty directory in the system's temporary folder (temp_directory_path: $TMPDIR when
// set), made by the constructor (mkdtemp: a new name each time, so tests may run in parallel) and
// removed with everything in it by the destructor.
//
//   TempDir dir;
//   write_file(dir.file("a.csv"), "x,label\n1,0\n");
//   run_normlab({"train", ..., "--out", (dir.path() / "out").string()});
//
// For a command's output folder that must not exist beforehand (e.g. to check that a failed
// command creates nothing), use a path inside it, such as dir.path() / "out".
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "normlab_test_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw Error("TempDir: mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory.
  const std::filesystem::path& path() const { return path_; }
  // A path inside it, as a string: dir.file("model.safetensors").
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // The names of the entries in it (sorted), to check that nothing was left behind.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

// The bytes of a whole file ("" if it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// s with every occurrence of `from` replaced by `to` (placeholders of stored command lines).
inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// Writes bytes as a new file at path, replacing any file there.
inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  // Remove first: truncating a file in place makes ext4 flush it to disk on close (auto_da_alloc).
  std::filesystem::remove(path);
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace normlab::test
