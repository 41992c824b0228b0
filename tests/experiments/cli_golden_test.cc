// The command line's exact texts against stored copies: the whole --help of normlab and of each
// subcommand (fixtures/help/*.txt), and the exact exit status and message of refused command lines
// (fixtures/cli_errors.txt), among them the presets and checks of several flags at once, whose
// order decides which error is said. Any change of one of these texts fails here, byte for byte.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "experiments/commands/cli.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using normlab::test::capture_output;
using normlab::test::read_file;
using normlab::test::replace_all;
using normlab::test::run_normlab;
using normlab::test::TempDir;
using normlab::test::write_file;

namespace {

const std::string kSource = NORMLAB_SOURCE_DIR;
const std::string kFixtures = kSource + "/tests/experiments/fixtures";


// The help with the --threads line's default (the machine's number of cores) as <cores>.
std::string without_core_count(const std::string& help) {
  std::istringstream in(help);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const std::string prefix = "  --threads INT=";
    const size_t words = line.find("worker threads (default: all cores)");
    if (line.rfind(prefix, 0) == 0 && words != std::string::npos) line = prefix + "<cores> " + line.substr(words);
    out += line + "\n";
  }
  return out;
}

// "status message" for a command line, as main() would exit and print it (after "normlab: error: ").
std::string refusal(const std::vector<std::string>& args) {
  try {
    return std::to_string(run_normlab(args)) + " (no error)";
  } catch (const normlab::experiments::UsageError& e) {
    return std::to_string(normlab::experiments::kExitUsage) + " " + e.what();
  } catch (const normlab::Error& e) {
    return std::to_string(normlab::experiments::kExitError) + " " + e.what();
  }
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_golden)

BOOST_AUTO_TEST_CASE(help_is_the_stored_text_byte_for_byte) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> helps = {
      {"normlab", {"--help"}},          {"train", {"train", "--help"}}, {"compare", {"compare", "--help"}},
      {"sweep", {"sweep", "--help"}},   {"study", {"study", "--help"}}, {"eval", {"eval", "--help"}},
      {"predict", {"predict", "--help"}}, {"generate", {"generate", "--help"}}};
  for (const auto& [name, args] : helps) {
    BOOST_TEST_CONTEXT(name) {
      const std::string want = read_file(kFixtures + "/help/" + name + ".txt");
      BOOST_REQUIRE_MESSAGE(want.size() > 100, "no stored help for " << name);
      int rc = -1;
      const std::string got = without_core_count(capture_output(1, [&] { rc = run_normlab(args); }));
      BOOST_TEST(rc == 0);
      BOOST_TEST(got == want);
    }
  }
}

BOOST_AUTO_TEST_CASE(refused_command_lines_give_the_stored_status_and_message) {
  TempDir t;
  write_file(t.path() / "tiny10.csv", "x,y\n0,b\n1,a\n2,b\n3,a\n4,b\n5,a\n6,b\n7,a\n8,b\n9,a\n");
  write_file(t.path() / "one.txt", std::string(100, 'a'));  // a text of one distinct character
  const std::string out = (t.path() / "out").string();
  const std::vector<std::pair<std::string, std::string>> places = {
      {"{fixtures}", kFixtures}, {"{data}", kSource + "/tests/data/fixtures"}, {"{tmp}", t.path().string()}, {"{out}", out}};
  std::istringstream in(read_file(kFixtures + "/cli_errors.txt"));
  int cases = 0;
  for (std::string line, want; std::getline(in, line);) {
    if (line.rfind("$ ", 0) != 0) continue;
    BOOST_REQUIRE(std::getline(in, want));
    std::string typed = line.substr(2);
    for (const auto& [name, path] : places) typed = replace_all(typed, name, path);
    std::vector<std::string> args = words(typed);
    args.insert(args.end(), {"--out", out, "--quiet"});
    BOOST_TEST_CONTEXT("normlab " << line.substr(2)) {
      std::string got = refusal(args);
      for (auto p = places.rbegin(); p != places.rend(); ++p) got = replace_all(got, p->second, p->first);  // {out} first
      BOOST_TEST(got == want);
      BOOST_TEST(!fs::exists(out), "the refused command created its output folder");
    }
    ++cases;
  }
  BOOST_TEST(cases >= 90, "only " << cases << " command lines read from cli_errors.txt");
}

BOOST_AUTO_TEST_SUITE_END()
