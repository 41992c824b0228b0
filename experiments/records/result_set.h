// A command's output folder, written as one set: every file goes to a hidden sibling folder that
// replaces the output folder in one step when the command is done. A command killed before that
// leaves the output folder as it was, beside a folder whose name says it is incomplete
// (".<name>.normlab-partial-<pid>"; each rank of an mpirun job has its own, partial_name); a
// command that fails removes its partial folder. `--resume`
// reads the finished runs a killed command left there (records.h), and the command that next
// puts a set in place of the output folder removes the partial folders of processes that are gone.
// An output folder that is a symbolic link is followed: the set replaces the folder it points to.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace normlab::experiments {

// The output folder that `out` (as given to --out) names: absolute, a symbolic link followed (its
// target, which need not exist yet). Throws normlab::Error naming `out` if it is the root.
std::filesystem::path output_folder(const std::filesystem::path& out);

// True if no process `pid` runs any more (pid > 0; kill(pid, 0) fails with ESRCH).
bool process_gone(long pid);

// The name of this process's partial folder beside the output folder `out`:
// ".<name>.normlab-partial-<pid>", and in an mpirun job "-m<mpirun's pid>" after it, so that the
// folder counts as a killed command's as soon as the mpirun is gone (killed_partials).
std::string partial_name(const std::filesystem::path& out);
// That folder's path: partial_name(out) in the folder that holds `out` (an output_folder).
std::filesystem::path partial_folder(const std::filesystem::path& out);

// The partial folders beside the output folder `out` (output_folder) of processes that are gone
// (or whose mpirun is gone): what killed commands left, every rank's, oldest first.
std::vector<std::filesystem::path> killed_partials(const std::filesystem::path& out);

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
  // removes the old set and the killed commands' partial folders (killed_partials). Throws
  // normlab::Error if it cannot.
  void commit();
  // An error message with the partial folder named as the user named the output folder: "cannot
  // write .../.out.normlab-partial-12/runs.csv" becomes "cannot write out/runs.csv".
  std::string in_user_terms(const std::string& message) const;

 private:
  void remove_killed() const;
  std::filesystem::path out_, partial_;
  std::string given_;  // --out as typed
  bool committed_ = false;
};

}  // namespace normlab::experiments
