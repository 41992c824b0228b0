// An mpirun rank's partial folder beside the output folder (rank_scratch.h).
#include "experiments/records/rank_scratch.h"

#include <string>
#include <system_error>

#include "base/error.h"
#include "experiments/records/result_set.h"
#include "experiments/support/output.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

RankScratch::RankScratch(const fs::path& out) : path_(partial_folder(output_folder(out))) {
  std::error_code ec;
  fs::remove_all(path_, ec);
  try {
    prepare_output_dir(path_);
  } catch (const Error& e) {
    throw Error("cannot write beside the output folder " + out.string() + " (--out): " + e.what());
  }
}

RankScratch::~RankScratch() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace normlab::experiments
