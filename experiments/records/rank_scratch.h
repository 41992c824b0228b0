// The partial folder of an mpirun job's rank other than 0, beside the output folder: the rank
// trains its share of the runs into it (rank 0 writes the results) and journals each run it
// finishes there, so that a job killed with kill -9 keeps every rank's finished runs for --resume
// (killed_partials, records.h: previous_runs). It is removed when the rank is done; one a killed
// rank left goes with the next set put in place of the output folder (ResultSet::commit).
#pragma once
#include <filesystem>

namespace normlab::experiments {

class RankScratch {
 public:
  // Creates the folder partial_name(out) beside the output folder `out` (output_folder, as typed
  // to --out). Throws normlab::Error naming --out when it cannot be written.
  explicit RankScratch(const std::filesystem::path& out);
  // Removes the folder and what it holds (errors ignored).
  ~RankScratch();
  RankScratch(const RankScratch&) = delete;
  RankScratch& operator=(const RankScratch&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace normlab::experiments
