// `normlab completion bash|zsh`: the scripts name every subcommand and flag and the registries'
// values, pass the shells' syntax checks, and the bash one completes subcommands, flags and
// values when bash calls it as it does on <TAB>; a shell that has no script is a usage error.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/commands/cli.h"
#include "experiments/commands/command.h"
#include "experiments/models/archs.h"
#include "experiments/registry/datasets.h"
#include "experiments/registry/entries.h"
#include "experiments/registry/layers.h"
#include "experiments/registry/optimizers.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using normlab::test::capture_output;
using normlab::test::run_command;
using normlab::test::run_normlab;
using normlab::test::TempDir;
using normlab::test::write_file;
namespace ex = normlab::experiments;

namespace {

std::string script(const std::string& shell) {
  return capture_output(1, [&] { BOOST_REQUIRE_EQUAL(run_normlab({"completion", shell}), 0); });
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

// The long flags `normlab <sub> --help` lists (the first word of its option lines: "  --norm TEXT ...").
std::vector<std::string> help_flags(const std::string& sub) {
  const std::string help = capture_output(1, [&] { run_normlab({"help", sub}); });
  std::vector<std::string> flags;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  -", 0) != 0) continue;  // an option's line, not a wrapped description's
    std::istringstream words(line);
    std::string first;
    words >> first;
    const size_t comma = first.find(",--");  // "-h,--help"
    if (comma != std::string::npos) first = first.substr(comma + 1);
    if (first.rfind("--", 0) == 0) flags.push_back(first);
  }
  return flags;
}

// What bash's completion function puts in COMPREPLY for the command line `line` (the last word
// the one being completed; a line ending in a space completes an empty word).
std::vector<std::string> bash_complete(const std::string& script_file, const std::string& line) {
  const std::string cmd =
      "bash -c 'source \"$1\"; read -ra COMP_WORDS <<< \"$2\"; [[ \"$2\" == *\" \" ]] && COMP_WORDS+=(\"\"); "
      "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _normlab; printf \"%s\\n\" \"${COMPREPLY[@]}\"' _ '" +
      script_file + "' '" + line + "'";
  const auto r = run_command(cmd);
  BOOST_REQUIRE_EQUAL(r.status, 0);
  std::vector<std::string> words;
  std::istringstream in(r.output);
  for (std::string w; std::getline(in, w);)
    if (!w.empty()) words.push_back(w);
  return words;
}

bool contains(const std::vector<std::string>& words, const std::string& w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(completion)

BOOST_AUTO_TEST_CASE(bash_script_names_every_subcommand_flag_and_registry_value) {
  const std::string s = script("bash");
  for (const auto& e : ex::commands::command_table()) {
    BOOST_TEST(s.find("'" + e.name + "')") != std::string::npos, e.name);
    for (const std::string& flag : help_flags(e.name))
      BOOST_TEST(s.find(" " + flag + " ") != std::string::npos, e.name << " " << flag);
  }
  // The choice flags' values, each from its registry (lists: comma-separated, the 1).
  const std::string norms = joined(ex::names_in(ex::norms()));
  BOOST_TEST(s.find("--norms) _normlab_values '" + norms + "' 1;") != std::string::npos);
  BOOST_TEST(s.find("--norm) _normlab_values '" + norms + "' 0;") != std::string::npos);
  BOOST_TEST(s.find("--cnn-norms) _normlab_values '" + norms + "' 1;") != std::string::npos);
  BOOST_TEST(s.find("--arch) _normlab_values '" + joined(ex::names_in(ex::archs())) + "' 0;") != std::string::npos);
  BOOST_TEST(s.find("--dataset) _normlab_values '" + joined(ex::names_in(ex::datasets())) + "' 0;") != std::string::npos);
  BOOST_TEST(s.find("--optimizer) _normlab_values '" + joined(ex::names_in(ex::optimizers())) + "' 0;") !=
             std::string::npos);
  BOOST_TEST(s.find("--activation) _normlab_values '" + joined(ex::names_in(ex::activations())) + "' 0;") !=
             std::string::npos);
  BOOST_TEST(s.find("--schedule) _normlab_values '" + joined(ex::names_in(ex::schedules())) + "' 0;") !=
             std::string::npos);
  // A flag without a value is no value flag (it would stop completion after --quick).
  BOOST_TEST(s.find("|--quick|") == std::string::npos);
  BOOST_TEST(s.find("|--quick)") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(bash_script_passes_bash_n_and_completes_words) {
  TempDir t;
  const std::string file = t.file("normlab.bash");
  write_file(file, script("bash"));
  BOOST_REQUIRE_EQUAL(run_command("bash -n '" + file + "' 2>&1").status, 0);
  BOOST_TEST(bash_complete(file, "normlab tr") == std::vector<std::string>{"train"});
  const auto flags = bash_complete(file, "normlab train --no");
  BOOST_TEST(contains(flags, "--norm"));
  BOOST_TEST(contains(flags, "--noise"));
  BOOST_TEST(!contains(flags, "--norms"));  // compare's and sweep's, not train's
  BOOST_TEST(contains(bash_complete(file, "normlab compare --no"), "--norms"));
  BOOST_TEST(bash_complete(file, "normlab train --norm ") == ex::names_in(ex::norms()));
  BOOST_TEST(bash_complete(file, "normlab train --arch ") == ex::names_in(ex::archs()));
  BOOST_TEST(bash_complete(file, "normlab compare --norms batch,la") == std::vector<std::string>{"batch,layer"});
  BOOST_TEST(bash_complete(file, "normlab help tr") == std::vector<std::string>{"train"});
  BOOST_TEST(bash_complete(file, "normlab completion ") == (std::vector<std::string>{"bash", "zsh"}));
  BOOST_TEST(bash_complete(file, "normlab --ver") == std::vector<std::string>{"--version"});
  // After a flag whose value is free (a file, a number): nothing, so bash completes file names.
  BOOST_TEST(bash_complete(file, "normlab train --csv ").empty());
  // After a flag without a value: flags again.
  BOOST_TEST(contains(bash_complete(file, "normlab train --quick --ep"), "--epochs"));
}

// The scripts are made at run time: a norm a program registers is completed as the built-in ones.
BOOST_AUTO_TEST_CASE(a_registered_norm_is_completed) {
  static const bool registered = [] {
    ex::register_norm({.name = "completion_test_norm", .make = [](const ex::LayerSpec&) { return nullptr; }});
    return true;
  }();
  BOOST_REQUIRE(registered);
  TempDir t;
  const std::string file = t.file("normlab.bash");
  write_file(file, script("bash"));
  BOOST_TEST(bash_complete(file, "normlab train --norm completion_t") == std::vector<std::string>{"completion_test_norm"});
  BOOST_TEST(script("zsh").find(" completion_test_norm)'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(zsh_script_passes_zsh_n_and_registers_itself) {
  const std::string s = script("zsh");
  BOOST_TEST(s.rfind("#compdef normlab\n", 0) == 0);
  for (const auto& e : ex::commands::command_table()) BOOST_TEST(s.find("'" + e.name + ":") != std::string::npos, e.name);
  BOOST_TEST(s.find(":norms:_sequence compadd - " + joined(ex::names_in(ex::norms())) + "'") != std::string::npos);
  BOOST_TEST(s.find(":arch:(" + joined(ex::names_in(ex::archs())) + ")'") != std::string::npos);
  if (run_command("command -v zsh >/dev/null").status != 0) {
    BOOST_TEST_MESSAGE("zsh is not installed: its syntax check is skipped");
    return;
  }
  TempDir t;
  const std::string file = t.file("_normlab");
  write_file(file, s);
  BOOST_REQUIRE_EQUAL(run_command("zsh -n '" + file + "' 2>&1").status, 0);
  // Sourced after compinit, it registers _normlab as normlab's completion function.
  const auto r = run_command("zsh -f -c 'autoload -U compinit && compinit -u -D && source \"$1\" && "
                             "print -r -- $_comps[normlab]' _ '" + file + "' 2>&1");
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.output == "_normlab\n");
}

BOOST_AUTO_TEST_CASE(unknown_or_missing_shell_is_a_usage_error_naming_the_shells) {
  try {
    run_normlab({"completion", "fish"});
    BOOST_ERROR("no error for fish");
  } catch (const ex::UsageError& e) {
    BOOST_TEST(std::string(e.what()).find("unknown shell 'fish' (expected one of: bash, zsh)") != std::string::npos,
               e.what());
  }
  BOOST_CHECK_THROW(run_normlab({"completion"}), ex::UsageError);
}

// The files the build made and `cmake --install` installs (cmake/ShellFiles.cmake) are the built
// command's current output (the binary's: norms registered by the tests in this process are not).
BOOST_AUTO_TEST_CASE(built_completion_scripts_are_the_commands_output) {
#if defined(NORMLAB_BASH_COMPLETION) && defined(NORMLAB_ZSH_COMPLETION)
  for (const std::string shell : {"bash", "zsh"}) {
    const auto r = run_command(std::string(NORMLAB_BINARY) + " completion " + shell);
    BOOST_REQUIRE_EQUAL(r.status, 0);
    BOOST_TEST(r.output.size() > 1000u);
    BOOST_TEST(normlab::test::read_file(shell == "bash" ? NORMLAB_BASH_COMPLETION : NORMLAB_ZSH_COMPLETION) == r.output,
               shell);
  }
#else
  BOOST_TEST_MESSAGE("this build makes no completion scripts (cross-compiling)");
#endif
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(man_page)

// The man page of help2man renders without groff warnings, and names every subcommand (a section
// each) and their flags.
BOOST_AUTO_TEST_CASE(renders_and_names_every_subcommand_and_flag) {
#ifdef NORMLAB_MAN_PAGE
  if (run_command("command -v groff >/dev/null").status != 0) {
    BOOST_TEST_MESSAGE("groff is not installed: the man page is not rendered");
    return;
  }
  const std::string page = NORMLAB_MAN_PAGE;
  // -ww: every warning; -z: no output. Then plain text (-P-c -P-b -P-u: no bold or underline), wide
  // lines and no hyphenation, so that names stay whole.
  const auto warnings = run_command("groff -man -Tascii -ww -z '" + page + "' 2>&1");
  BOOST_TEST(warnings.status == 0);
  BOOST_TEST(warnings.output == "");
  const auto text = run_command("groff -man -Tascii -rLL=250n -rHY=0 -P-c -P-b -P-u '" + page + "'");
  BOOST_REQUIRE_EQUAL(text.status, 0);
  BOOST_TEST(text.output.find("NORMLAB(1)") != std::string::npos);
  for (const auto& e : ex::commands::command_table()) {
    BOOST_TEST(text.output.find("\n   normlab " + e.name + "\n") != std::string::npos, e.name);
    for (const std::string& flag : help_flags(e.name))
      BOOST_TEST(text.output.find(flag) != std::string::npos, e.name << " " << flag);
  }
  if (run_command("command -v man >/dev/null").status == 0)
    BOOST_TEST(run_command("man -l '" + page + "' >/dev/null 2>&1").status == 0);
#else
  BOOST_TEST_MESSAGE("help2man was not found at configure time: no man page to check");
#endif
}

BOOST_AUTO_TEST_SUITE_END()
