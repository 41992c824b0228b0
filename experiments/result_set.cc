// Output folders written as one set: a partial sibling folder, exchanged into place at the end.
#include "experiments/result_set.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "experiments/output.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

namespace {

// True if replacing this existing folder loses nothing but an earlier normlab result.
bool replaceable(const fs::path& out) {
  if (fs::is_empty(out)) return true;
  return fs::exists(out / "manifest.json") || fs::exists(out / "report.md");
}

}  // namespace

ResultSet::ResultSet(fs::path out) : out_(std::move(out)) {
  const std::string given = out_.string();  // as the user wrote it (--out)
  std::error_code ec;
  out_ = fs::absolute(out_, ec).lexically_normal();
  if (out_.filename().empty()) out_ = out_.parent_path();  // "dir/" names dir
  if (out_ == out_.root_path()) throw Error("cannot write to output folder " + out_.string() + ": it is the root");
  if (fs::exists(out_, ec)) {
    if (!fs::is_directory(out_, ec))
      throw Error("cannot write to output folder " + out_.string() + ": it exists and is not a folder");
    if (!replaceable(out_))
      throw Error("cannot write to output folder " + out_.string() +
                  ": it holds files that are not a normlab result (no manifest.json or report.md); choose a new "
                  "or empty folder with --out");
  }
  const fs::path parent = out_.parent_path().empty() ? fs::path(".") : out_.parent_path();
  partial_ = parent / ("." + out_.filename().string() + ".normlab-partial-" + std::to_string(::getpid()));
  fs::remove_all(partial_, ec);
  try {
    prepare_output_dir(partial_);  // creates the parents too, and checks the folder is writable
  } catch (const Error& e) {  // the message names --out, not the hidden folder beside it
    const std::string inner = "cannot write to output folder " + partial_.string() + ": ", what = e.what();
    throw Error("cannot write to output folder " + given + " (--out): " +
                (what.rfind(inner, 0) == 0 ? what.substr(inner.size()) : what));
  }
}

ResultSet::~ResultSet() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(partial_, ec);
}

void ResultSet::commit() {
  std::error_code ec;
  const auto fail = [&](const std::string& what, const std::string& why) {
    committed_ = true;  // keep the complete set where it is
    throw Error(what + ": " + why + " (the complete results are in " + partial_.string() + ")");
  };
  if (!fs::exists(out_, ec)) {
    if (::rename(partial_.c_str(), out_.c_str()) != 0) fail("cannot put the results in " + out_.string(), std::strerror(errno));
    committed_ = true;
    return;
  }
  // Both exist: swap them in one step, so that the output folder is always one complete set.
  if (::renameat2(AT_FDCWD, partial_.c_str(), AT_FDCWD, out_.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) fail("cannot put the results in place of " + out_.string(), std::strerror(errno));
    // A file system without the exchange: move the old set aside first.
    const fs::path old = partial_.string() + "-old";
    if (::rename(out_.c_str(), old.c_str()) != 0) fail("cannot move " + out_.string() + " aside", std::strerror(errno));
    if (::rename(partial_.c_str(), out_.c_str()) != 0) fail("cannot put the results in " + out_.string(), std::strerror(errno));
    committed_ = true;
    fs::remove_all(old, ec);
    return;
  }
  committed_ = true;
  fs::remove_all(partial_, ec);  // now the previous set
  if (ec) throw Error("cannot remove the previous results, now in " + partial_.string() + ": " + ec.message());
}

}  // namespace normlab::experiments
