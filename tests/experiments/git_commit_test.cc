// The manifests' git commit: cmake/GitCommit.cmake (run at every build) names HEAD, adds "-dirty"
// for uncommitted changes to tracked files, says "unknown" without git or outside a checkout, and
// leaves its output untouched while nothing changes (so a build at the same commit recompiles nothing).
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "experiments/support/git_commit.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using normlab::test::read_file;
using normlab::test::run_command;
using normlab::test::TempDir;

namespace {

// Runs a shell command; returns its standard output (the test fails if it exits non-zero).
std::string sh(const std::string& cmd) {
  const normlab::test::CommandResult r = run_command(cmd);
  BOOST_TEST(r.status == 0, "command failed: " << cmd);
  return r.output;
}

bool have_git() { return run_command("command -v git >/dev/null 2>&1").status == 0; }

// Runs cmake/GitCommit.cmake for `source` (with `git`, "" for none) into `out`; returns the
// commit string written there.
std::string commit_of(const fs::path& source, const std::string& git, const fs::path& out) {
  // Git must not find a repository above the test's folder.
  sh("GIT_CEILING_DIRECTORIES='" + source.parent_path().string() + "' '" NORMLAB_CMAKE_COMMAND "' -DGIT='" + git +
     "' -DSOURCE_DIR='" + source.string() + "' -DOUT='" + out.string() + "' -P '" NORMLAB_SOURCE_DIR
     "/cmake/GitCommit.cmake'");
  const std::string text = read_file(out);
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
  TempDir repo, build;
  init_repo_with_one_commit(repo.path());
  const fs::path out = build.path() / "git_commit.cc";
  std::string head = git(repo.path(), "rev-parse --short=12 HEAD");
  head.erase(head.find_last_not_of('\n') + 1);
  BOOST_TEST(head.size() >= 12u);
  BOOST_TEST(commit_of(repo.path(), "git", out) == head);
  // An untracked file does not make the tree dirty; a change to a tracked one does.
  std::ofstream(repo.path() / "untracked.txt") << "x\n";
  BOOST_TEST(commit_of(repo.path(), "git", out) == head);
  std::ofstream(repo.path() / "a.txt") << "two\n";
  BOOST_TEST(commit_of(repo.path(), "git", out) == head + "-dirty");
  // Committed: clean again, at the new commit.
  git(repo.path(), "commit -q -a -m two");
  const std::string head2 = commit_of(repo.path(), "git", out);
  BOOST_TEST(head2 != head);
  BOOST_TEST(head2.find("-dirty") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(output_is_rewritten_only_when_the_commit_changes) {
  if (!have_git()) return;
  TempDir repo, build;
  init_repo_with_one_commit(repo.path());
  const fs::path out = build.path() / "git_commit.cc";
  commit_of(repo.path(), "git", out);
  const auto old = fs::last_write_time(out) - std::chrono::hours(1);
  fs::last_write_time(out, old);
  commit_of(repo.path(), "git", out);  // same commit: the file keeps its time (no recompilation)
  BOOST_TEST((fs::last_write_time(out) == old));
  std::ofstream(repo.path() / "a.txt") << "two\n";
  commit_of(repo.path(), "git", out);  // dirty now: rewritten
  BOOST_TEST((fs::last_write_time(out) != old));
  for (const auto& e : fs::directory_iterator(build.path()))  // no temporary file left
    BOOST_TEST(e.path().filename() == "git_commit.cc", e.path());
}

BOOST_AUTO_TEST_CASE(unknown_without_git_or_outside_a_checkout) {
  TempDir plain, build;
  BOOST_TEST(commit_of(plain.path(), "", build.path() / "a.cc") == "unknown");
  if (have_git()) BOOST_TEST(commit_of(plain.path(), "git", build.path() / "b.cc") == "unknown");
  BOOST_TEST(commit_of(plain.path(), "/no/such/git", build.path() / "c.cc") == "unknown");
}

BOOST_AUTO_TEST_CASE(the_binary_knows_its_commit_or_says_unknown) {
  const std::string c = normlab::experiments::git_commit();
  BOOST_TEST(std::regex_match(c, std::regex("[0-9a-f]{12,40}(-dirty)?|unknown")), c);
}

BOOST_AUTO_TEST_SUITE_END()
