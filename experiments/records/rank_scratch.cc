// An mpirun rank's scratch folder, and the removal of those that killed jobs left (rank_scratch.h).
#include "experiments/records/rank_scratch.h"

#include <string>
#include <system_error>

#include <unistd.h>

#include "experiments/records/result_set.h"
#include "experiments/support/output.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "normlab-rank";

// The process id of a folder named normlab-rank<R>-<pid>, or 0 for another name.
long pid_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return 0;
  const size_t dash = name.find('-', std::string(kPrefix).size());
  if (dash == std::string::npos || dash + 1 >= name.size()) return 0;
  for (size_t i = std::string(kPrefix).size(); i < name.size(); ++i)
    if (i != dash && (name[i] < '0' || name[i] > '9')) return 0;
  try {
    return std::stol(name.substr(dash + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

int remove_stale_rank_scratch(const fs::path& dir) {
  std::error_code ec;
  int removed = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const long pid = pid_of(e.path().filename().string());
    if (!process_gone(pid) || !e.is_directory(ec)) continue;
    if (fs::remove_all(e.path(), ec) > 0 && !ec) ++removed;
  }
  return removed;
}

RankScratch::RankScratch(int rank)
    : path_(fs::temp_directory_path() / (kPrefix + std::to_string(rank) + "-" + std::to_string(::getpid()))) {
  remove_stale_rank_scratch(path_.parent_path());
  prepare_output_dir(path_);
}

RankScratch::~RankScratch() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace normlab::experiments
