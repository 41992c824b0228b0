// A command's output folder, written as one set: every file goes to a hidden sibling folder that
// replaces the output folder in one step when the command is done. A command killed before that
// leaves the output folder as it was, beside a folder whose name says it is incomplete
// (".<name>.normlab-partial-<pid>"); a command that fails removes its partial folder.
#pragma once
#include <filesystem>

namespace normlab::experiments {

class ResultSet {
 public:
  // Checks that `out` can be replaced (it does not exist, is empty, or holds a normlab result:
  // manifest.json or report.md) and creates the partial folder beside it; throws normlab::Error
  // naming the folder otherwise.
  explicit ResultSet(std::filesystem::path out);
  // Not committed (an error happened): removes the partial folder.
  ~ResultSet();
  ResultSet(const ResultSet&) = delete;
  ResultSet& operator=(const ResultSet&) = delete;

  // Where the command writes its files.
  const std::filesystem::path& dir() const { return partial_; }
  // The output folder the set becomes.
  const std::filesystem::path& out() const { return out_; }
  // Puts the set in place of the output folder at once (an atomic exchange when one exists), then
  // removes the old set. Throws normlab::Error if it cannot.
  void commit();

 private:
  std::filesystem::path out_, partial_;
  bool committed_ = false;
};

}  // namespace normlab::experiments
