// Output folders written as one set: a partial sibling folder, exchanged into place at the end.
#include "experiments/records/result_set.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.h"
#include "dist/dist.h"
#include "experiments/support/output.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

namespace {

// True if replacing this existing folder loses nothing but an earlier normlab result.
bool replaceable(const fs::path& out) {
  if (fs::is_empty(out)) return true;
  return fs::exists(out / "manifest.json") || fs::exists(out / "report.md");
}

// The numbers after "-" and "-m" in the text after "-partial-": "<pid>[-m<mpirun's pid>][-old]".
// True if the process no longer runs, or the mpirun that started it is gone (its ranks then die
// with it, but may take a moment: they are not waited for).
bool gone(const std::string& name) {
  try {
    size_t used = 0;
    const long pid = std::stol(name, &used);
    if (process_gone(pid)) return true;
    if (name.compare(used, 2, "-m") != 0) return false;
    return process_gone(std::stol(name.substr(used + 2)));
  } catch (const std::exception&) {
    return false;
  }
}

// ".<name>.normlab-partial-": the start of the partial folders' names of the output folder out.
std::string partial_prefix(const fs::path& out) { return "." + out.filename().string() + ".normlab-partial-"; }

}  // namespace

std::string partial_name(const fs::path& out) {
  std::string name = partial_prefix(out) + std::to_string(::getpid());
  if (dist::launched()) name += "-m" + std::to_string(::getppid());  // a rank's parent is its mpirun
  return name;
}

fs::path partial_folder(const fs::path& out) {
  const fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  return parent / partial_name(out);
}

fs::path output_folder(const fs::path& given) {
  std::error_code ec;
  fs::path out = fs::absolute(given, ec).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();  // "dir/" names dir
  for (int links = 0; fs::is_symlink(out, ec); ++links) {  // --out is a link: the folder it points to
    if (links == 40) throw Error("cannot write to output folder " + given.string() + ": too many symbolic links");
    const fs::path to = fs::read_symlink(out, ec);
    out = (to.is_absolute() ? to : out.parent_path() / to).lexically_normal();
    if (out.filename().empty()) out = out.parent_path();
  }
  if (out == out.root_path()) throw Error("cannot write to output folder " + given.string() + ": it is the root");
  return out;
}

bool process_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

std::vector<fs::path> killed_partials(const fs::path& out) {
  const std::string prefix = partial_prefix(out);
  std::vector<std::pair<fs::file_time_type, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string n = e.path().filename().string();
    if (n.starts_with(prefix) && gone(n.substr(prefix.size())) && e.is_directory(ec))
      found.emplace_back(fs::last_write_time(e.path(), ec), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

ResultSet::ResultSet(fs::path out) : out_(output_folder(out)), given_(out.string()) {
  const std::string& given = given_;
  std::error_code ec;
  if (fs::exists(out_, ec)) {
    if (!fs::is_directory(out_, ec))
      throw Error("cannot write to output folder " + out_.string() + ": it exists and is not a folder");
    if (!replaceable(out_))
      throw Error("cannot write to output folder " + out_.string() +
                  ": it holds files that are not a normlab result (no manifest.json or report.md); choose a new "
                  "or empty folder with --out");
  }
  partial_ = partial_folder(out_);
  fs::remove_all(partial_, ec);
  try {
    prepare_output_dir(partial_);  // creates the parents too, and checks the folder is writable
  } catch (const Error& e) {  // the message names --out, not the hidden folder beside it
    const std::string inner = "cannot write to output folder " + partial_.string() + ": ", what = e.what();
    throw Error("cannot write to output folder " + given + " (--out): " +
                (what.rfind(inner, 0) == 0 ? what.substr(inner.size()) : what));
  }
}

std::string ResultSet::in_user_terms(const std::string& message) const {
  const std::string hidden = partial_.string();
  std::string m = message;
  for (size_t at = m.find(hidden); at != std::string::npos; at = m.find(hidden, at + given_.size()))
    m.replace(at, hidden.size(), given_);
  return m;
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
    remove_killed();
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
    remove_killed();
    return;
  }
  committed_ = true;
  fs::remove_all(partial_, ec);  // now the previous set
  if (ec) throw Error("cannot remove the previous results, now in " + partial_.string() + ": " + ec.message());
  remove_killed();
}

// What killed commands left beside the output folder: the new set replaced it, so none is wanted.
void ResultSet::remove_killed() const {
  std::error_code ec;
  for (const fs::path& p : killed_partials(out_)) fs::remove_all(p, ec);
}

}  // namespace normlab::experiments
