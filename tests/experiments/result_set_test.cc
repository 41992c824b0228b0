// Output folders as whole sets, Ctrl-C and --resume: a failed command leaves nothing, a killed one
// leaves the previous set and a partial folder named as such, a folder of other files is never
// replaced; Ctrl-C writes the finished runs marked interrupted (exit 130), a second Ctrl-C quits at
// once, and --resume finishes the rest with CSV files byte for byte those of an uninterrupted run,
// also after kill -9 (the journal of finished runs); the next set removes killed commands' partial
// folders; --resume refuses another command's or other flags' results; --out may be a link; an
// mpirun rank's partial folder goes with the rank, and those of killed ranks with the next set.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "experiments/commands/cli.h"
#include "experiments/records/rank_scratch.h"
#include "experiments/records/records.h"
#include "experiments/records/result_set.h"
#include "experiments/support/interrupt.h"
#include "serialize/safetensors.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using namespace normlab::experiments;
using normlab::test::read_file;
using normlab::test::write_file;
using normlab::test::run_normlab_quiet;
using normlab::test::TempDir;

namespace {

std::vector<std::string> names_in(const fs::path& d) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(d)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

// The CSV files below a folder, by relative path, with their bytes.
std::map<std::string, std::string> csv_files(const fs::path& d) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(d))
    if (e.path().extension() == ".csv") m[fs::relative(e.path(), d).string()] = read_file(e.path());
  return m;
}

// Starts the normlab binary with args (output to /dev/null); returns its pid. max_file_bytes > 0
// limits the size of any file it writes (RLIMIT_FSIZE: a full disk, as far as it can tell).
pid_t spawn(const std::vector<std::string>& args, rlim_t max_file_bytes = 0) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (max_file_bytes > 0) {
      const rlimit lim{max_file_bytes, max_file_bytes};
      ::setrlimit(RLIMIT_FSIZE, &lim);
      ::signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead of killing
    }
    std::vector<std::string> a{NORMLAB_BINARY};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::freopen("/dev/null", "w", stdout);
    ::freopen("/dev/null", "w", stderr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_status(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Waits (at most 30 s) until a partial folder exists in `parent`.
bool wait_for_partial(const fs::path& parent) {
  for (int i = 0; i < 3000; ++i) {
    for (const auto& e : fs::directory_iterator(parent))
      if (e.path().filename().string().find(".normlab-partial-") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}


// The number of finished runs in the journals below `dir` (a partial folder): their whole lines
// that hold a run ({"index": ...}).
size_t journaled_runs(const fs::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.path().filename() == kJournal) {
      const std::string text = read_file(e.path());  // maybe a line being written: only whole lines count
      for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
        n += text.compare(at, 9, "{\"index\":") == 0;
    }
  return n;
}

// The partial folders in parent.
std::vector<fs::path> partials_in(const fs::path& parent) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(parent))
    if (e.path().filename().string().find(".normlab-partial-") != std::string::npos) v.push_back(e.path());
  return v;
}

// Starts normlab with args and kills it (SIGKILL) once its partial folder's journals hold at least
// `runs` finished runs (0: as soon as its partial folder exists); returns the runs journaled then.
size_t kill_after_runs(const std::vector<std::string>& args, const fs::path& parent, size_t runs) {
  const pid_t pid = spawn(args);
  size_t seen = 0;
  bool ready = false;
  int st = 0;
  for (int i = 0; i < 60000 && !ready; ++i) {
    for (const fs::path& p : partials_in(parent))
      if (p.filename().string().ends_with("-" + std::to_string(pid)) && (seen = journaled_runs(p)) >= runs)
        ready = true;
    if (!ready && ::waitpid(pid, &st, WNOHANG) == pid) break;  // it ended before: the test fails below
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  BOOST_REQUIRE_MESSAGE(ready, "the command ended or took too long before " << runs << " runs finished");
  ::kill(pid, SIGKILL);
  BOOST_TEST(wait_status(pid) == 128 + SIGKILL);
  return seen;
}

// The manifest's "runs_reused" (-1 if it has none).
long runs_reused(const fs::path& manifest) {
  const std::string m = read_file(manifest);
  const size_t at = m.find("\"runs_reused\": ");
  return at == std::string::npos ? -1 : std::stol(m.substr(at + 15));
}

// The text of the error a normlab command throws ("no error" if it throws none).
std::string error_of(std::vector<std::string> args) {
  try {
    run_normlab_quiet(std::move(args));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

const std::vector<std::string> kLongSweep{"sweep", "--dataset", "moons", "--samples", "20000", "--epochs", "40",
                                          "--batch-sizes", "2,4", "--norms", "none,batch", "--seeds", "0",
                                          "--quiet", "--threads", "1"};

std::vector<std::string> kLongSweep_with(const fs::path& out) {
  std::vector<std::string> a = kLongSweep;
  a.insert(a.end(), {"--out", out.string()});
  return a;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(result_set)

BOOST_AUTO_TEST_CASE(a_set_replaces_the_folder_whole_or_not_at_all) {
  TempDir t;
  const fs::path out = t.path() / "out";
  {
    ResultSet set(out);
    std::ofstream(set.dir() / "a.csv") << "1\n";
    BOOST_TEST(!fs::exists(out));  // nothing in place before the commit
  }                                // an error before the commit: nothing left at all
  BOOST_TEST(names_in(t.path()).empty());
  fs::create_directories(out);
  std::ofstream(out / "manifest.json") << "{}";
  std::ofstream(out / "old.csv") << "old\n";
  {
    ResultSet set(out);
    std::ofstream(set.dir() / "manifest.json") << "{\"new\": 1}";
    set.commit();
  }
  BOOST_TEST((names_in(out) == std::vector<std::string>{"manifest.json"}));  // the old set is gone whole
  BOOST_TEST(names_in(t.path()) == std::vector<std::string>{"out"});         // no partial or old folder
  // A folder of the user's own files is never replaced; nor is a file.
  const fs::path mine = t.path() / "mine";
  fs::create_directories(mine);
  std::ofstream(mine / "thesis.tex") << "x";
  BOOST_CHECK_EXCEPTION(ResultSet{mine}, normlab::Error,
                        [](const normlab::Error& e) { return std::string(e.what()).find("not a normlab result") != std::string::npos; });
  std::ofstream(t.path() / "file") << "x";
  BOOST_CHECK_THROW(ResultSet{t.path() / "file"}, normlab::Error);
  BOOST_TEST(read_file(mine / "thesis.tex") == "x");
}

BOOST_AUTO_TEST_CASE(errors_while_writing_name_the_out_given) {
  // A file that cannot be written during a run is named under --out as the user typed it, not
  // under the hidden partial folder it was being written in.
  TempDir t;
  const std::string given = (t.path() / "results").string();
  ResultSet set(given);
  const std::string hidden = set.dir().string();
  BOOST_TEST(set.in_user_terms("cannot write " + hidden + "/runs.csv: No space left on device") ==
             "cannot write " + given + "/runs.csv: No space left on device");
  BOOST_TEST(set.in_user_terms("no path here") == "no path here");
}

BOOST_AUTO_TEST_CASE(a_killed_command_leaves_the_previous_set_and_a_partial_folder) {
  TempDir t;
  const fs::path out = t.path() / "out";
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"compare", "--quick", "--seeds", "0", "--epochs", "1", "--out",
                                         out.string()}), 0);
  const std::string before = read_file(out / "runs.csv");
  std::vector<std::string> args = kLongSweep;
  args.insert(args.end(), {"--out", out.string()});
  const pid_t pid = spawn(args);
  BOOST_REQUIRE(wait_for_partial(t.path()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // training, with its folder half written
  ::kill(pid, SIGKILL);
  BOOST_TEST(wait_status(pid) == 128 + SIGKILL);
  BOOST_TEST(read_file(out / "runs.csv") == before);  // the previous, complete set
  BOOST_TEST(fs::exists(out / "manifest.json"));
  size_t partial = 0;
  for (const auto& e : fs::directory_iterator(t.path()))
    partial += e.path().filename().string().rfind(".out.normlab-partial-", 0) == 0;
  BOOST_TEST(partial == 1u);  // named as incomplete
}

BOOST_AUTO_TEST_CASE(a_full_disk_is_an_error_and_leaves_the_previous_set) {
  TempDir t;
  const fs::path out = t.path() / "out";
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"train", "--quick", "--epochs", "1", "--out", out.string()}), 0);
  const std::string before = read_file(out / "manifest.json");
  // Files of at most 24 KB: the CSV files fit, the PNG does not; gnuplot still exits 0 with a cut
  // PNG, which must not be taken for a plot.
  const pid_t pid = spawn({"train", "--quick", "--epochs", "1", "--quiet", "--out", out.string()}, 24000);
  BOOST_TEST(wait_status(pid) == kExitError);
  BOOST_TEST(read_file(out / "manifest.json") == before);
  BOOST_TEST((names_in(t.path()) == std::vector<std::string>{"out"}));  // the partial folder was removed
}

BOOST_AUTO_TEST_CASE(interrupted_commands_resume_to_byte_identical_csv_files) {
  struct Case {
    std::vector<std::string> args;
    int64_t steps;  // steps before the simulated Ctrl-C
  };
  const std::vector<Case> cases{
      {{"sweep", "--quick", "--norms", "none,batch"}, 1500},  // stops inside the batch-2 runs
      {{"compare", "--quick", "--seeds", "0,1"}, 200},
      {{"study", "--quick", "--seeds", "0"}, 300},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.args[0]) {
      TempDir t;
      auto with_out = [&](const fs::path& out, std::vector<std::string> extra = {}) {
        std::vector<std::string> a = c.args;
        a.insert(a.end(), {"--out", out.string()});
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
      };
      clear_interrupt();
      BOOST_REQUIRE_EQUAL(run_normlab_quiet(with_out(t.path() / "whole")), kExitOk);
      interrupt_after_steps(c.steps);
      BOOST_TEST(run_normlab_quiet(with_out(t.path() / "part")) == kExitInterrupted);
      clear_interrupt();
      const std::string report = read_file(t.path() / "part" / "report.md");
      BOOST_TEST(report.find("Interrupted (Ctrl-C)") != std::string::npos);
      BOOST_TEST(csv_files(t.path() / "part") != csv_files(t.path() / "whole"));
      BOOST_TEST(run_normlab_quiet(with_out(t.path() / "part", {"--resume"})) == kExitOk);
      BOOST_TEST(read_file(t.path() / "part" / "report.md").find("Interrupted") == std::string::npos);
      const auto whole = csv_files(t.path() / "whole"), resumed = csv_files(t.path() / "part");
      BOOST_TEST(whole.size() == resumed.size());
      for (const auto& [name, bytes] : whole) BOOST_TEST(resumed.at(name) == bytes, name);
    }
  }
  // --resume needs the folder of an earlier command.
  TempDir t;
  BOOST_CHECK_THROW(run_normlab_quiet({"sweep", "--quick", "--resume", "--out",
                                       (t.path() / "none").string()}), UsageError);
}

BOOST_AUTO_TEST_CASE(train_resumes_to_the_same_bits_after_ctrl_c_and_after_kill) {
  // BatchNorm (running statistics), momentum, warmup + cosine: every piece of state matters.
  const std::vector<std::string> base{"train", "--quick", "--norm", "batch", "--batch-size", "8", "--epochs", "12",
                                      "--eval-every", "150"};
  const auto with = [&](const fs::path& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--out", out.string()});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto same_as_whole = [](const fs::path& whole, const fs::path& resumed) {
    const auto w = csv_files(whole), r = csv_files(resumed);
    BOOST_TEST(w.size() == r.size());
    for (const auto& [name, bytes] : w) BOOST_TEST((r.count(name) == 1 && r.at(name) == bytes), name);
    // The whole state_dict (weights and running statistics), bit for bit; the metadata is the same too.
    BOOST_TEST(read_file(whole / "model.safetensors") == read_file(resumed / "model.safetensors"));
  };
  TempDir t;
  clear_interrupt();
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(with(t.path() / "whole")), kExitOk);
  // Ctrl-C in the middle of epoch 3 (200 steps per epoch): the set holds a checkpoint at that step.
  for (const int64_t steps : {470, 600}) {  // mid-epoch; at an epoch's end, before its evaluation
    BOOST_TEST_CONTEXT("Ctrl-C after " << steps << " steps") {
      const fs::path part = t.path() / ("part" + std::to_string(steps));
      interrupt_after_steps(steps);
      BOOST_TEST(run_normlab_quiet(with(part)) == kExitInterrupted);
      clear_interrupt();
      BOOST_TEST(fs::exists(part / "checkpoint" / "state.json"));
      BOOST_TEST(read_file(part / "report.md").find("--resume") != std::string::npos);
      BOOST_TEST(run_normlab_quiet(with(part, {"--resume"})) == kExitOk);
      same_as_whole(t.path() / "whole", part);
    }
  }
  // Killed (SIGKILL) after a checkpoint: the partial folder it leaves holds the checkpoint, which
  // --resume finds beside --out, continues, and then removes.
  const fs::path killed = t.path() / "killed";
  const pid_t pid = spawn(with(killed, {"--checkpoint-every", "1"}));
  bool saw_checkpoint = false;
  for (int i = 0; i < 30000 && !saw_checkpoint; ++i) {
    for (const auto& e : fs::directory_iterator(t.path()))
      if (e.path().filename().string().starts_with(".killed.normlab-partial-") &&
          fs::exists(e.path() / "checkpoint" / "state.json"))
        saw_checkpoint = true;
    if (!saw_checkpoint) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  BOOST_REQUIRE(saw_checkpoint);
  BOOST_TEST(wait_status(pid) == 128 + SIGKILL);
  BOOST_REQUIRE(!fs::exists(killed));  // killed before it finished
  BOOST_TEST(run_normlab_quiet(with(killed, {"--checkpoint-every", "1", "--resume"})) == kExitOk);
  same_as_whole(t.path() / "whole", killed);
  for (const auto& e : fs::directory_iterator(t.path()))
    BOOST_TEST(e.path().filename().string().find(".normlab-partial-") == std::string::npos, e.path());
  // --resume DIR: the checkpoint folder of another output folder.
  BOOST_TEST(run_normlab_quiet(with(t.path() / "from_dir", {"--resume", (killed / "checkpoint").string()})) == kExitOk);
  same_as_whole(t.path() / "whole", t.path() / "from_dir");
}

BOOST_AUTO_TEST_CASE(a_model_trained_on_a_csv_file_resumes_to_the_same_bits) {
  TempDir t;
  const std::string csv = std::string(NORMLAB_SOURCE_DIR) + "/tests/experiments/fixtures/iris_like.csv";
  const auto with = [&](const fs::path& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"train", "--csv", csv, "--label", "species", "--norm", "batch", "--epochs", "8",
                               "--batch-size", "8", "--out", out.string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  clear_interrupt();
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(with(t.path() / "whole")), kExitOk);
  interrupt_after_steps(13);  // 48 training rows at batch 8: in epoch 3
  BOOST_TEST(run_normlab_quiet(with(t.path() / "part")) == kExitInterrupted);
  clear_interrupt();
  BOOST_TEST(run_normlab_quiet(with(t.path() / "part", {"--resume"})) == kExitOk);
  const auto w = csv_files(t.path() / "whole"), r = csv_files(t.path() / "part");
  BOOST_TEST(w.size() == r.size());
  for (const auto& [name, bytes] : w) BOOST_TEST((r.count(name) == 1 && r.at(name) == bytes), name);
  BOOST_TEST(read_file(t.path() / "whole" / "model.safetensors") ==
             read_file(t.path() / "part" / "model.safetensors"));
}

BOOST_AUTO_TEST_CASE(train_resumes_adam_and_adamw_to_the_same_bits) {
  for (const char* opt : {"adam", "adamw"}) {
    BOOST_TEST_CONTEXT(opt) {
      TempDir t;
      const auto with = [&](const fs::path& out, std::vector<std::string> extra = {}) {
        std::vector<std::string> a{"train", "--quick", "--norm", "layer", "--optimizer", opt, "--out", out.string()};
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
      };
      clear_interrupt();
      BOOST_REQUIRE_EQUAL(run_normlab_quiet(with(t.path() / "whole")), kExitOk);
      interrupt_after_steps(70);  // in epoch 2 (50 steps per epoch)
      BOOST_TEST(run_normlab_quiet(with(t.path() / "part")) == kExitInterrupted);
      clear_interrupt();
      BOOST_TEST(run_normlab_quiet(with(t.path() / "part", {"--resume"})) == kExitOk);
      const auto w = csv_files(t.path() / "whole"), r = csv_files(t.path() / "part");
      for (const auto& [name, bytes] : w) BOOST_TEST((r.count(name) == 1 && r.at(name) == bytes), name);
      BOOST_TEST(read_file(t.path() / "whole" / "model.safetensors") ==
                 read_file(t.path() / "part" / "model.safetensors"));
      // A checkpoint of another optimizer is refused, naming the setting.
      interrupt_after_steps(70);
      BOOST_TEST(run_normlab_quiet(with(t.path() / "other")) == kExitInterrupted);
      clear_interrupt();
      try {
        run_normlab_quiet({"train", "--quick", "--norm", "layer", "--out", (t.path() / "other").string(), "--resume"});
        BOOST_ERROR("resumed with another optimizer");
      } catch (const std::exception& e) {
        BOOST_TEST(std::string(e.what()).find("optimizer") != std::string::npos, e.what());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(train_resume_refuses_other_settings_and_missing_checkpoints) {
  TempDir t;
  const fs::path part = t.path() / "part";
  interrupt_after_steps(30);
  BOOST_TEST(run_normlab_quiet({"train", "--quick", "--out", part.string()}) == kExitInterrupted);
  clear_interrupt();
  const auto error_of = [](std::vector<std::string> args) {
    try {
      run_normlab_quiet(std::move(args));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string other = error_of({"train", "--quick", "--lr", "0.2", "--out", part.string(), "--resume"});
  BOOST_TEST(other.find("other settings (lr 0.1 then, 0.2 now)") != std::string::npos, other);
  const std::string data = error_of({"train", "--quick", "--samples", "3000", "--out", part.string(), "--resume"});
  BOOST_TEST(data.find("the data differ") != std::string::npos, data);
  const std::string none = error_of({"train", "--quick", "--out", (t.path() / "nothing").string(), "--resume"});
  BOOST_TEST(none.find("--resume: no checkpoint in") != std::string::npos, none);
  // A damaged state.json is named.
  { std::ofstream(part / "checkpoint" / "state.json") << "{\"normlab_checkpoint\": 1}"; }
  const std::string bad = error_of({"train", "--quick", "--out", (t.path() / "x").string(), "--resume", part.string()});
  BOOST_TEST(bad.find("state.json: not a normlab checkpoint") != std::string::npos, bad);
}

BOOST_AUTO_TEST_CASE(ctrl_c_writes_the_finished_runs_and_a_second_one_quits_at_once) {
  TempDir t;
  const fs::path out = t.path() / "out";
  std::vector<std::string> args = kLongSweep;
  args.insert(args.end(), {"--out", out.string()});
  pid_t pid = spawn(args);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ::kill(pid, SIGINT);
  BOOST_TEST(wait_status(pid) == kExitInterrupted);
  BOOST_TEST(read_file(out / "report.md").find("Interrupted (Ctrl-C): 0 of 4 runs finished") != std::string::npos);
  BOOST_TEST(fs::exists(out / "records.json"));
  // Twice: the second Ctrl-C ends the process at once, with status 130.
  pid = ::fork();
  if (pid == 0) {
    install_interrupt_handler();
    ::raise(SIGINT);
    if (!interrupted()) ::_exit(1);  // the first only asks to stop
    ::raise(SIGINT);
    ::_exit(0);  // not reached
  }
  BOOST_TEST(wait_status(pid) == kExitInterrupted);
}

BOOST_AUTO_TEST_CASE(a_sweep_killed_after_n_runs_resumes_from_them_to_the_same_csv_files) {
  const std::vector<std::string> base{"sweep", "--quick", "--norms", "none,batch", "--seeds", "0,1", "--batch-sizes",
                                      "2,8", "--samples", "1500", "--epochs", "8", "--threads", "1", "--quiet"};
  const auto with_out = [&](const fs::path& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--out", out.string()});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  TempDir t;
  clear_interrupt();
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(with_out(t.path() / "whole")), kExitOk);
  const auto whole = csv_files(t.path() / "whole");
  BOOST_REQUIRE_EQUAL(whole.size(), 3u);
  for (const size_t n : {1, 3, 6}) {  // of 8 runs
    BOOST_TEST_CONTEXT("killed after " << n << " runs") {
      TempDir k;
      const fs::path out = k.path() / "out";
      const size_t done = kill_after_runs(with_out(out), k.path(), n);
      BOOST_TEST(done >= n);
      BOOST_REQUIRE(!fs::exists(out));  // killed before the end: only the partial folder
      BOOST_TEST(partials_in(k.path()).size() == 1u);
      BOOST_TEST(run_normlab_quiet(with_out(out, {"--resume"})) == kExitOk);
      BOOST_TEST(runs_reused(out / "manifest.json") >= static_cast<long>(done));  // not trained again
      const auto resumed = csv_files(out);
      BOOST_TEST(resumed.size() == whole.size());
      for (const auto& [name, bytes] : whole) BOOST_TEST((resumed.count(name) == 1 && resumed.at(name) == bytes), name);
      BOOST_TEST(partials_in(k.path()).empty());  // the killed command's folder was removed
      BOOST_TEST(!fs::exists(out / kJournal));    // records.json holds the runs
    }
  }
}

BOOST_AUTO_TEST_CASE(a_killed_resume_and_killed_compare_and_study_keep_their_finished_runs) {
  struct Case {
    std::vector<std::string> args;
    size_t runs;  // killed once this many runs finished
  };
  const std::vector<Case> cases{
      {{"compare", "--quick", "--seeds", "0,1", "--epochs", "4"}, 1},
      {{"study", "--quick", "--seeds", "0"}, 3},  // the comparison (2 runs) and a run of the sweep
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.args[0]) {
      TempDir t;
      const auto with_out = [&](const fs::path& out, std::vector<std::string> extra = {}) {
        std::vector<std::string> a = c.args;
        a.insert(a.end(), {"--threads", "1", "--quiet", "--out", out.string()});
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
      };
      clear_interrupt();
      BOOST_REQUIRE_EQUAL(run_normlab_quiet(with_out(t.path() / "whole")), kExitOk);
      const fs::path out = t.path() / "part";
      const size_t first = kill_after_runs(with_out(out), t.path(), c.runs);
      // A resume killed in turn: its journal holds the runs it took over and those it trained.
      const size_t second = kill_after_runs(with_out(out, {"--resume"}), t.path(), first + 1);
      BOOST_TEST(second > first);
      BOOST_TEST(run_normlab_quiet(with_out(out, {"--resume"})) == kExitOk);
      const auto whole = csv_files(t.path() / "whole"), resumed = csv_files(out);
      BOOST_TEST(whole.size() == resumed.size());
      for (const auto& [name, bytes] : whole) BOOST_TEST((resumed.count(name) == 1 && resumed.at(name) == bytes), name);
      BOOST_TEST(partials_in(t.path()).empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(the_partial_folders_of_killed_commands_are_removed_by_the_next_set) {
  TempDir t;
  const fs::path out = t.path() / "out";
  const pid_t gone = ::fork();  // a process id that no longer runs
  if (gone == 0) ::_exit(0);
  wait_status(gone);
  const fs::path dead = t.path() / (".out.normlab-partial-" + std::to_string(gone));
  const fs::path live = t.path() / (".out.normlab-partial-" + std::to_string(::getppid()));  // a running process
  const fs::path other = t.path() / (".other.normlab-partial-" + std::to_string(gone));
  for (const fs::path& p : {dead, live, other}) fs::create_directories(p);
  BOOST_TEST((killed_partials(out) == std::vector<fs::path>{dead}));
  // A killed command's partial folder, empty (killed before a run finished): a later command on
  // the same --out succeeds and removes it; a running process's and another folder's stay.
  TempDir k;
  kill_after_runs(kLongSweep_with(k.path() / "out"), k.path(), 0);
  BOOST_TEST(partials_in(k.path()).size() == 1u);
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"compare", "--quick", "--seeds", "0", "--epochs", "1", "--out",
                                         (k.path() / "out").string()}), kExitOk);
  BOOST_TEST(partials_in(k.path()).empty());
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"compare", "--quick", "--seeds", "0", "--epochs", "1", "--out",
                                         out.string()}), kExitOk);
  BOOST_TEST(!fs::exists(dead));
  BOOST_TEST(fs::exists(live));
  BOOST_TEST(fs::exists(other));
  // Killed before its first run finished, it leaves nothing to resume: --resume says so.
  TempDir e;
  kill_after_runs(kLongSweep_with(e.path() / "out"), e.path(), 0);
  const std::string none = error_of({"sweep", "--quick", "--resume", "--out", (e.path() / "out").string()});
  BOOST_TEST(none.find("holds no results to continue") != std::string::npos, none);
}

BOOST_AUTO_TEST_CASE(resume_refuses_results_of_another_command_or_other_flags_naming_them) {
  TempDir t;
  const fs::path out = t.path() / "out";
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"sweep", "--quick", "--batch-sizes", "8,32", "--out", out.string()}), kExitOk);
  const std::string before = read_file(out / "runs.csv");
  const std::string cmd = error_of({"compare", "--quick", "--resume", "--out", out.string()});
  BOOST_TEST(cmd.find("the results of `normlab sweep`, not of `normlab compare`") != std::string::npos, cmd);
  const std::string flags =
      error_of({"sweep", "--quick", "--batch-sizes", "8,64", "--epochs", "2", "--resume", "--out", out.string()});
  BOOST_TEST(flags.find("other flags (--batch-sizes 8,32 then, --batch-sizes 8,64 now; no --epochs then, "
                        "--epochs 2 now)") != std::string::npos, flags);
  BOOST_TEST(read_file(out / "runs.csv") == before);  // untouched
  // The same flags (in another order, other --threads): resumed, every run reused.
  BOOST_TEST(run_normlab_quiet({"sweep", "--batch-sizes", "8,32", "--quick", "--threads", "1", "--resume", "--out",
                                out.string()}) == kExitOk);
  BOOST_TEST(runs_reused(out / "manifest.json") == 18);  // 3 norms, 3 seeds, 2 batch sizes
  BOOST_TEST(read_file(out / "runs.csv") == before);
  // A killed command's journal records its flags too.
  const fs::path killed = t.path() / "killed";
  kill_after_runs({"sweep", "--quick", "--quiet", "--threads", "1", "--out", killed.string()}, t.path(), 1);
  const std::string other = error_of({"sweep", "--quick", "--lr", "0.2", "--resume", "--out", killed.string()});
  BOOST_TEST(other.find("no --lr then, --lr 0.2 now") != std::string::npos, other);
}

// The data are compared too: a text, CSV or IDX file changed since the results were made (the
// same flags) is refused, naming the file, its size and CRC-32 then and now; restored, it resumes.
BOOST_AUTO_TEST_CASE(resume_refuses_results_made_from_a_changed_data_file) {
  TempDir t;
  const std::string text = (t.path() / "t.txt").string(), csv = (t.path() / "i.csv").string();
  const std::string sample = read_file(std::string(NORMLAB_SOURCE_DIR) + "/tests/data/fixtures/text_sample.txt");
  const std::string iris = read_file(std::string(NORMLAB_SOURCE_DIR) + "/tests/experiments/fixtures/iris_like.csv");
  write_file(text, sample);
  write_file(csv, iris);
  const std::vector<std::string> lm = {"sweep", "--dataset", "text", "--text", text, "--layers", "1", "--width", "16",
                                       "--heads", "2", "--block-size", "16", "--batch-sizes", "2,4", "--norms", "layer",
                                       "--seeds", "0", "--train-tokens", "256", "--out", (t.path() / "lm").string()};
  const std::vector<std::string> table = {"compare", "--csv", csv, "--label", "species", "--epochs", "1", "--seeds", "0",
                                          "--norms", "none,batch", "--out", (t.path() / "csv").string()};
  for (const auto& args : {lm, table}) BOOST_REQUIRE_EQUAL(run_normlab_quiet(args), kExitOk);
  const auto resumed = [](std::vector<std::string> args) {
    args.push_back("--resume");
    return args;
  };
  write_file(text, sample + "appended\n");
  const std::string appended = error_of(resumed(lm));
  BOOST_TEST(appended.find("made from other data: --text " + text + " was " + std::to_string(sample.size()) +
                           " bytes, CRC-32 ") != std::string::npos, appended);
  BOOST_TEST(appended.find("is now " + std::to_string(sample.size() + 9) + " bytes") != std::string::npos, appended);
  std::string edited = iris;
  edited[edited.find('\n') + 1] = edited[edited.find('\n') + 1] == '5' ? '6' : '5';  // one digit, the same size
  write_file(csv, edited);
  const std::string changed = error_of(resumed(table));
  BOOST_TEST(changed.find("made from other data: --csv " + csv + " was " + std::to_string(iris.size())) !=
                 std::string::npos, changed);
  BOOST_TEST(changed.find("is now " + std::to_string(iris.size()) + " bytes, CRC-32") != std::string::npos, changed);
  write_file(text, sample);  // restored: every run taken
  write_file(csv, iris);
  BOOST_TEST(run_normlab_quiet(resumed(lm)) == kExitOk);
  BOOST_TEST(run_normlab_quiet(resumed(table)) == kExitOk);
  BOOST_TEST(runs_reused(t.path() / "csv" / "manifest.json") == 2);
}

BOOST_AUTO_TEST_CASE(an_out_that_is_a_symbolic_link_is_followed) {
  TempDir t;
  const fs::path target = t.path() / "results", link = t.path() / "latest";
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"compare", "--quick", "--seeds", "0", "--epochs", "1", "--out",
                                         target.string()}), kExitOk);
  fs::create_directory_symlink("results", link);
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"compare", "--quick", "--seeds", "0", "--epochs", "2", "--out",
                                         link.string()}), kExitOk);
  BOOST_TEST(fs::is_symlink(link));  // still the link
  BOOST_TEST(read_file(target / "report.md").find("--epochs 2") != std::string::npos);  // the new set, where it points
  BOOST_TEST((names_in(t.path()) == std::vector<std::string>{"latest", "results"}));
  // A link to a folder that does not exist yet: the set is made there.
  const fs::path dangling = t.path() / "next";
  fs::create_directory_symlink(t.path() / "made", dangling);
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"compare", "--quick", "--seeds", "0", "--epochs", "1", "--out",
                                         dangling.string()}), kExitOk);
  BOOST_TEST(fs::is_symlink(dangling));
  BOOST_TEST(fs::exists(t.path() / "made" / "runs.csv"));
  // --resume through the link continues the folder it points to.
  BOOST_TEST(run_normlab_quiet({"compare", "--quick", "--seeds", "0", "--epochs", "1", "--resume", "--out",
                                dangling.string()}) == kExitOk);
  BOOST_TEST(runs_reused(t.path() / "made" / "manifest.json") == 3);  // none, batch, layer
}

BOOST_AUTO_TEST_CASE(an_interrupted_train_says_so_records_its_steps_and_eval_and_predict_warn) {
  TempDir t;
  const std::string csv = std::string(NORMLAB_SOURCE_DIR) + "/tests/experiments/fixtures/iris_like.csv";
  const auto train = [&](const fs::path& out) {
    return run_normlab_quiet({"train", "--csv", csv, "--label", "species", "--epochs", "8", "--batch-size", "8",
                              "--val-fraction", "0", "--out", out.string()});
  };
  const auto stderr_of = [&](const fs::path& dir) {
    const std::string model = (dir / "model.safetensors").string();
    return normlab::test::capture_output(2, [&] {
      BOOST_TEST(run_normlab_quiet({"eval", "--checkpoint", model, "--csv", csv, "--out", (dir / "eval").string()}) ==
                 kExitOk);
      BOOST_TEST(run_normlab_quiet({"predict", "--checkpoint", model, "--csv", csv, "--out",
                                    (dir / "p.csv").string()}) == kExitOk);
    });
  };
  clear_interrupt();
  interrupt_after_steps(13);  // 48 training rows at batch 8: 6 steps per epoch, 48 planned
  BOOST_REQUIRE(train(t.path() / "part") == kExitInterrupted);
  clear_interrupt();
  const std::string report = read_file(t.path() / "part" / "report.md");
  BOOST_TEST(report.find("Interrupted (Ctrl-C) after 13 steps of 48") != std::string::npos, report);
  BOOST_TEST(report.find("holds the weights at the interruption, after 13 of 48 steps: not the final model") !=
             std::string::npos, report);
  BOOST_TEST(report.find("The final model is in") == std::string::npos);
  const auto md = normlab::serialize::load_safetensors((t.path() / "part" / "model.safetensors").string()).metadata;
  BOOST_TEST(md.at("steps") == "13");
  BOOST_TEST(md.at("planned_steps") == "48");
  BOOST_TEST(md.at("interrupted") == "true");
  const std::string warned = stderr_of(t.path() / "part");
  const std::string warning = "warning: " + (t.path() / "part" / "model.safetensors").string() +
                              " holds the weights at an interruption of its training (Ctrl-C after 13 of 48 steps";
  size_t count = 0;
  for (size_t at = warned.find(warning); at != std::string::npos; at = warned.find(warning, at + 1)) ++count;
  BOOST_TEST(count == 2u, warned);  // eval, then predict
  // A finished run: the final model, all its steps, no warning.
  BOOST_REQUIRE(train(t.path() / "whole") == kExitOk);
  BOOST_TEST(read_file(t.path() / "whole" / "report.md").find("The final model is in `model.safetensors`") !=
             std::string::npos);
  const auto whole = normlab::serialize::load_safetensors((t.path() / "whole" / "model.safetensors").string()).metadata;
  BOOST_TEST(whole.at("steps") == "48");
  BOOST_TEST(whole.count("interrupted") == 0u);
  BOOST_TEST(stderr_of(t.path() / "whole").find("warning") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_journal_cut_by_a_kill_gives_its_whole_lines) {
  TempDir t;
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"sweep", "--quick", "--norms", "none", "--seeds", "0", "--batch-sizes", "8,32",
                                         "--out", (t.path() / "done").string()}), kExitOk);
  const auto runs = read_records(t.path() / "done" / "records.json").value();
  BOOST_REQUIRE_EQUAL(runs.size(), 2u);
  // A killed command's partial folder: its journal holds run 1, then a line the kill cut.
  const fs::path killed = t.path() / ".x.normlab-partial-1";
  fs::create_directories(killed);
  const std::string line = nlohmann::json{{"index", 1}, {"records", runs[1]}}.dump();
  normlab::test::write_file(killed / kJournal, "{\"command\":\"sweep\",\"normlab_journal\":1}\n" + line + "\n" +
                                                   line.substr(0, line.size() / 2));
  const auto previous = previous_runs({}, {killed});
  BOOST_REQUIRE_EQUAL(previous.size(), 2u);
  BOOST_TEST(previous[0].is_null());
  BOOST_TEST(previous[1] == runs[1]);
  BOOST_TEST(journal_header(killed / kJournal)["command"] == "sweep");
  // --out's records come first; the journal fills the runs they lack.
  const auto both = previous_runs(t.path() / "done", {killed});
  BOOST_TEST((both.size() == 2u && both[0] == runs[0] && both[1] == runs[1]));
}

// An mpirun rank's partial folder names its mpirun too ("<pid>-m<mpirun's pid>"): once the mpirun
// is gone, the folder is a killed command's at once, though its rank may live a moment longer.
BOOST_AUTO_TEST_CASE(a_partial_folder_whose_mpirun_is_gone_is_a_killed_commands) {
  TempDir t;
  const pid_t gone = ::fork();  // a process id that no longer runs
  if (gone == 0) ::_exit(0);
  wait_status(gone);
  const std::string live = std::to_string(::getppid()), dead = std::to_string(gone);
  const fs::path out = t.path() / "out";
  for (const std::string& tail : {live + "-m" + dead, live + "-m" + live, live, dead + "-m" + live, live + "-mx"})
    fs::create_directories(t.path() / (".out.normlab-partial-" + tail));
  std::vector<std::string> killed;
  for (const fs::path& p : killed_partials(out)) killed.push_back(p.filename().string());
  std::sort(killed.begin(), killed.end());
  std::vector<std::string> want = {".out.normlab-partial-" + live + "-m" + dead, ".out.normlab-partial-" + dead + "-m" + live};
  std::sort(want.begin(), want.end());
  BOOST_TEST(killed == want, "killed partials: " << killed.size());
  // A rank's own folder beside --out exists while it works and is gone after it.
  fs::path mine;
  {
    const RankScratch scratch(out);
    mine = scratch.path();
    BOOST_TEST(fs::is_directory(mine));
    BOOST_TEST(mine == t.path() / partial_name(output_folder(out)));
    BOOST_TEST(mine.filename().string() == ".out.normlab-partial-" + std::to_string(::getpid()));
    std::ofstream(mine / "runs.csv") << "a,b\n";
  }
  BOOST_TEST(!fs::exists(mine));
}

BOOST_AUTO_TEST_SUITE_END()
