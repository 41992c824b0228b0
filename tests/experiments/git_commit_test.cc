// The manifests' git commit: cmake/GitCommit.cmake (run at every build) names HEAD, adds "-dirty"
// for uncommitted changes to tracked files, says "unknown" without git or outside a checkout, and
// leaves its output untouched while nothing changes (so a build at the same commit recompiles nothing).
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "experiments/git_commit.h"

namespace fs = std::filesystem;

namespace {

// A fresh temporary folder, removed at the end of the test.
struct Tmp {
  fs::path dir;
  Tmp() {
    static int counter = 0;
    dir = fs::temp_directory_path() / ("normlab_git_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Tmp() { fs::remove_all(dir); }
};

// Runs a shell command; returns its standard output (the test fails if it exits non-zero).
std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  BOOST_REQUIRE(p);
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  BOOST_TEST(::pclose(p) == 0, "command failed: " << cmd);
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool have_git() { return std::system("command -v git >/dev/null 2>&1") == 0; }

// Runs cmake/GitCommit.cmake for `source` (with `git`, "" for none) into `out`; returns the
// commit string written there.
std::string commit_of(const fs::path& source, const std::string& git, const fs::path& out) {
  // Git must not find a repository above the test's folder.
  sh("GIT_CEILING_DIRECTORIES='" + source.parent_path().string() + "' '" NORMLAB_CMAKE_COMMAND "' -DGIT='" + git +
     "' -DSOURCE_DIR='" + source.string() + "' -DOUT='" + out.string() + "' -P '" NORMLAB_SOURCE_DIR
     "/cmake/GitCommit.cmake'");
  const std::string text = slurp(out);
  std::smatch m;
  BOOST_REQUIRE(std::regex_search(text, m, std::regex("return \"([^\"]*)\";")));
  return m[1];
}

// git in `repo`, with an identity for commits.
std::string git(const fs::path& repo, const std::string& args) {
  return sh("git -C '" + repo.string() + "' -c user.name=normlab -c user.email=normlab@example.com " + args);
}

// A new repository in `repo` with one commit of a tracked file a.txt.
void init_repo_with_one_commit(const fs::path& repo) {
  git(repo, "init -q");
  std::ofstream(repo / "a.txt") << "one\n";
  git(repo, "add a.txt");
  git(repo, "commit -q -m one");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(git_commit)

BOOST_AUTO_TEST_CASE(names_head_and_marks_uncommitted_changes_to_tracked_files) {
  if (!have_git()) return;  // nothing to check without git (the "unknown" case is tested below)
  Tmp repo, build;
  init_repo_with_one_commit(repo.dir);
  const fs::path out = build.dir / "git_commit.cc";
  std::string head = git(repo.dir, "rev-parse --short=12 HEAD");
  head.erase(head.find_last_not_of('\n') + 1);
  BOOST_TEST(head.size() >= 12u);
  BOOST_TEST(commit_of(repo.dir, "git", out) == head);
  // An untracked file does not make the tree dirty; a change to a tracked one does.
  std::ofstream(repo.dir / "untracked.txt") << "x\n";
  BOOST_TEST(commit_of(repo.dir, "git", out) == head);
  std::ofstream(repo.dir / "a.txt") << "two\n";
  BOOST_TEST(commit_of(repo.dir, "git", out) == head + "-dirty");
  // Committed: clean again, at the new commit.
  git(repo.dir, "commit -q -a -m two");
  const std::string head2 = commit_of(repo.dir, "git", out);
  BOOST_TEST(head2 != head);
  BOOST_TEST(head2.find("-dirty") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(output_is_rewritten_only_when_the_commit_changes) {
  if (!have_git()) return;
  Tmp repo, build;
  init_repo_with_one_commit(repo.dir);
  const fs::path out = build.dir / "git_commit.cc";
  commit_of(repo.dir, "git", out);
  const auto old = fs::last_write_time(out) - std::chrono::hours(1);
  fs::last_write_time(out, old);
  commit_of(repo.dir, "git", out);  // same commit: the file keeps its time (no recompilation)
  BOOST_TEST((fs::last_write_time(out) == old));
  std::ofstream(repo.dir / "a.txt") << "two\n";
  commit_of(repo.dir, "git", out);  // dirty now: rewritten
  BOOST_TEST((fs::last_write_time(out) != old));
  for (const auto& e : fs::directory_iterator(build.dir))  // no temporary file left
    BOOST_TEST(e.path().filename() == "git_commit.cc", e.path());
}

BOOST_AUTO_TEST_CASE(unknown_without_git_or_outside_a_checkout) {
  Tmp plain, build;
  BOOST_TEST(commit_of(plain.dir, "", build.dir / "a.cc") == "unknown");
  if (have_git()) BOOST_TEST(commit_of(plain.dir, "git", build.dir / "b.cc") == "unknown");
  BOOST_TEST(commit_of(plain.dir, "/no/such/git", build.dir / "c.cc") == "unknown");
}

BOOST_AUTO_TEST_CASE(the_binary_knows_its_commit_or_says_unknown) {
  const std::string c = normlab::experiments::git_commit();
  BOOST_TEST(std::regex_match(c, std::regex("[0-9a-f]{12,40}(-dirty)?|unknown")), c);
}

BOOST_AUTO_TEST_SUITE_END()
