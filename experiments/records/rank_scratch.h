// The scratch folder of an mpirun job's rank other than 0: the rank trains its share of the runs
// into it (rank 0 writes the results), and it is removed when the rank is done. A rank killed
// with the job cannot remove its folder, so every new one first removes those left by processes
// that no longer run.
#pragma once
#include <filesystem>

namespace normlab::experiments {

class RankScratch {
 public:
  // Creates <temp>/normlab-rank<rank>-<pid> (prepare_output_dir) after removing every
  // <temp>/normlab-rank*-<pid> folder whose process is gone. Throws normlab::Error when it cannot
  // be written.
  explicit RankScratch(int rank);
  // Removes the folder and what it holds (errors ignored).
  ~RankScratch();
  RankScratch(const RankScratch&) = delete;
  RankScratch& operator=(const RankScratch&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Removes the folders named normlab-rank<R>-<pid> in `dir` whose process `pid` no longer runs;
// returns how many it removed. Folders of running processes and other names are left alone.
int remove_stale_rank_scratch(const std::filesystem::path& dir);

}  // namespace normlab::experiments
