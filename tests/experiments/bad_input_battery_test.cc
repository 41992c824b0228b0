// A battery of bad inputs to the normlab command (fixtures/bad_inputs.txt), each run as its own
// process under a time limit: sizes that cannot fit, edited or damaged checkpoints, special files,
// generate's limits, text and CSV data a model cannot learn from, flags in the wrong words, and
// --resume after the data changed. Every case must end within its limit (no hang), by exit status
// 1 or 2 (no crash: no signal, no abort), with one "normlab: error: " line holding the stored words
// and none of the C++ library's (no "std::", "bad_alloc", "stod"), and leave no output folder and no
// partial folder behind. A section per class, a test case per section. NORMLAB_BATTERY_PRINT=FILE
// appends what each case gave to FILE instead (to remake the stored lines after a deliberate change).
#include <boost/test/unit_test.hpp>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "serialize/safetensors.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using normlab::test::read_file;
using normlab::test::replace_all;
using normlab::test::run_command;
using normlab::test::TempDir;
using normlab::test::write_file;

namespace {

const std::string kSource = NORMLAB_SOURCE_DIR;
constexpr int kLimitSeconds = 60;  // a case still running then is killed and counts as a hang

struct Case {
  std::string args, want;  // the command line as stored; "<status> <words>"
};

// The cases of section `name` of the battery ("## name" up to the next "## ").
std::vector<Case> section(const std::string& name) {
  std::istringstream in(read_file(kSource + "/tests/experiments/fixtures/bad_inputs.txt"));
  std::vector<Case> cases;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line.substr(3) == name;
    if (!inside || line.rfind("$ ", 0) != 0) continue;
    Case c{line.substr(2), ""};
    BOOST_REQUIRE_MESSAGE(std::getline(in, c.want), "no expected line after " << line);
    cases.push_back(c);
  }
  return cases;
}


// The files the cases name, made in a temporary folder: {tmp}/... and the placeholders below.
class Inputs {
 public:
  explicit Inputs(const std::string& cases) {
    const fs::path d = tmp_.path();
    places_["{tmp}"] = d.string();
    places_["{fixtures}"] = kSource + "/tests/experiments/fixtures";
    places_["{data}"] = kSource + "/tests/data/fixtures";
    places_["{out}"] = (d / "out").string();
    const std::string sample = read_file(kSource + "/tests/data/fixtures/text_sample.txt");
    write_file(d / "text.txt", sample);
    write_file(d / "one.txt", std::string(100, 'a'));
    write_file(d / "empty.txt", "");
    write_file(d / "bom.txt", "\xEF\xBB\xBF");
    write_file(d / "nul.txt", std::string("PK\x03\x04\0\0abc", 9));
    write_file(d / "latin1.txt", "caf\xE9 au lait, " + sample);
    write_file(d / "tiny10.csv", "x,y\n0,b\n1,a\n2,b\n3,a\n4,b\n5,a\n6,b\n7,a\n8,b\n9,a\n");
    write_file(d / "oneclass.csv", "x,y\n0,a\n1,a\n2,a\n3,a\n");
    write_file(d / "header.csv", "x,y\n");
    write_file(d / "ragged.csv", "x,y\n0,a\n1\n2,b\n");
    std::string many = "x,city,y\n";
    for (int i = 0; i < 50000; ++i) many += std::to_string(i % 7) + ",c" + std::to_string(i) + "," + std::to_string(i % 2) + "\n";
    write_file(d / "cities.csv", many);
    fs::create_directories(d / "folder");
    BOOST_REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
    BOOST_REQUIRE(::mkfifo((d / "fifo.safetensors").c_str(), 0600) == 0);
    if (cases.find("{gpt}") != std::string::npos || cases.find("{ck}") != std::string::npos ||
        cases.find("{csvmlp}") != std::string::npos)
      make_checkpoints();
    if (cases.find("{resumed}") != std::string::npos) make_results();
  }

  std::string typed(const std::string& args) const {
    std::string s = args;
    for (const auto& [name, path] : places_) s = replace_all(s, name, path);
    return s;
  }
  std::string in_stored_terms(std::string s) const {
    for (const char* name : {"{out}", "{fixtures}", "{data}", "{tmp}"}) s = replace_all(s, places_.at(name), name);
    return s;
  }
  const fs::path& dir() const { return tmp_.path(); }

 private:
  void run(const std::string& args) {
    const auto r = run_command(std::string(NORMLAB_BINARY) + " " + typed(args) + " --quiet 2>&1");
    BOOST_REQUIRE_MESSAGE(r.status == 0, "setup failed: normlab " << args << ": " << r.output);
  }

  // {gpt}, {lstm}, {mlp}: tiny trained models; {ck}/<name>.safetensors: the GPT's edited copies.
  void make_checkpoints() {
    const fs::path d = tmp_.path();
    run("train --dataset text --text {tmp}/text.txt --width 16 --layers 1 --heads 2 --block-size 16 --steps 2 --out {tmp}/gpt");
    run("train --dataset text --text {tmp}/text.txt --arch lstm --width 8 --hidden 16 --block-size 16 --steps 2 --out {tmp}/lstm");
    run("train --quick --epochs 1 --out {tmp}/mlp");
    run("train --csv {fixtures}/iris_like.csv --label species --epochs 1 --out {tmp}/csvmlp");
    places_["{gpt}"] = (d / "gpt" / "model.safetensors").string();
    places_["{lstm}"] = (d / "lstm" / "model.safetensors").string();
    places_["{mlp}"] = (d / "mlp" / "model.safetensors").string();
    places_["{csvmlp}"] = (d / "csvmlp" / "model.safetensors").string();
    places_["{ck}"] = (d / "ck").string();
    fs::create_directories(d / "ck");
    const auto gpt = normlab::serialize::load_safetensors(places_["{gpt}"]);
    const auto lstm = normlab::serialize::load_safetensors(places_["{lstm}"]);
    const auto mlp = normlab::serialize::load_safetensors(places_["{mlp}"]);
    const auto edit = [&](const normlab::serialize::SafetensorsFile& f, const std::string& name, const std::string& key,
                          const std::string& value) {
      auto md = f.metadata;
      if (value == "<erased>") md.erase(key);
      else md[key] = value;
      normlab::serialize::save_safetensors((d / "ck" / (name + ".safetensors")).string(), f.tensors, md);
    };
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"n_layer", "100000000"}, {"n_layer", "0"}, {"n_layer", "-1"}, {"width", "1048576"}, {"width", "x"},
             {"block_size", "1000000000"}, {"block_size", "0"}, {"vocab_size", "77"}, {"vocab_size", "0"},
             {"n_head", "3"}, {"n_head", "0"}, {"val_fraction", "abc"}, {"val_fraction", "nan"}, {"val_fraction", "2"},
             {"val_fraction", "-1"}, {"val_fraction", "0"}, {"norm", "foo"}, {"position", "sideways"}, {"arch", "rnn"},
             {"vocabulary", ""}, {"vocabulary", "<erased>"}, {"n_layer", "<erased>"}})
      edit(gpt, "gpt_" + key + "_" + (value.empty() ? "empty" : value == "<erased>" ? "erased" : value), key, value);
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"hidden_size", "100000"}, {"num_layers", "1000"}, {"embed_dim", "5"}, {"block_size", "1000000000"}})
      edit(lstm, "lstm_" + key + "_" + value, key, value);
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"hidden", "100000000"}, {"inputs", "3"}, {"norm", "foo"}})
      edit(mlp, "mlp_" + key + "_" + value, key, value);
    const auto poisoned = [&](const normlab::serialize::SafetensorsFile& f, const std::string& name,
                              const std::string& tensor, float value) {
      normlab::autograd::NamedTensors tensors;
      for (const auto& [n, t] : f.tensors) tensors.emplace_back(n, t.clone());
      for (auto& [n, t] : tensors)
        if (n == tensor) t.data<float>()[1] = value;
      normlab::serialize::save_safetensors((d / "ck" / (name + ".safetensors")).string(), tensors, f.metadata);
    };
    poisoned(gpt, "gpt_nan", "transformer.wte.weight", NAN);
    poisoned(gpt, "gpt_inf", "transformer.wte.weight", INFINITY);
    poisoned(lstm, "lstm_nan", "embedding.weight", NAN);
    poisoned(mlp, "mlp_nan", mlp.tensors.front().first, NAN);
    const std::string bytes = read_file(places_["{gpt}"]);
    write_file(d / "ck" / "truncated.safetensors", bytes.substr(0, bytes.size() / 2));
    write_file(d / "ck" / "header_only.safetensors", bytes.substr(0, 8));
    write_file(d / "ck" / "empty.safetensors", "");
    write_file(d / "ck" / "text.safetensors", "this is not a checkpoint\n");
    std::string huge_header = bytes;  // a header length of 2^60
    for (int i = 0; i < 8; ++i) huge_header[i] = i == 7 ? '\x10' : '\0';
    write_file(d / "ck" / "huge_header.safetensors", huge_header);
  }

  // {resumed}: finished results of a text sweep and a CSV compare, whose data then changed.
  void make_results() {
    const fs::path d = tmp_.path();
    write_file(d / "changing.txt", read_file(d / "text.txt"));
    write_file(d / "changing.csv", read_file(kSource + "/tests/experiments/fixtures/iris_like.csv"));
    run("sweep --dataset text --text {tmp}/changing.txt --layers 1 --width 16 --heads 2 --block-size 16 --batch-sizes 2,4 "
        "--norms layer --seeds 0 --train-tokens 256 --out {tmp}/lm");
    run("compare --csv {tmp}/changing.csv --label species --epochs 1 --seeds 0 --norms none --out {tmp}/table");
    write_file(d / "changing.txt", read_file(d / "text.txt") + "appended\n");
    std::string csv = read_file(d / "changing.csv");
    csv[csv.find('\n') + 1] = csv[csv.find('\n') + 1] == '5' ? '6' : '5';
    write_file(d / "changing.csv", csv);
    places_["{resumed}"] = d.string();
  }

  TempDir tmp_;
  std::map<std::string, std::string> places_;
};

// The partial folders (".<name>.normlab-partial-*") in dir.
std::vector<std::string> partial_folders(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".normlab-partial-") != std::string::npos) found.push_back(e.path().string());
  return found;
}

// Runs every case of the section and checks each as the file's header says.
void run_section(const std::string& name, size_t at_least) {
  const std::vector<Case> cases = section(name);
  BOOST_TEST(cases.size() >= at_least, "section " << name << " holds " << cases.size() << " cases");
  std::string all;
  for (const Case& c : cases) all += c.args + "\n";
  const Inputs in(all);
  const fs::path out = in.dir() / "out", err = in.dir() / "stderr.txt";
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("normlab " << c.args) {
      std::string typed = in.typed(c.args);
      if (c.args.find("--out ") == std::string::npos && c.args.rfind("generate", 0) != 0 &&
          c.args.rfind("predict", 0) != 0)
        typed += " --out " + out.string();
      const auto start = std::chrono::steady_clock::now();
      const auto r = run_command("timeout -s KILL " + std::to_string(kLimitSeconds) + " " + std::string(NORMLAB_BINARY) +
                                 " " + typed + " < /dev/null 2> " + err.string() + " > /dev/null");
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string printed = read_file(err);
      const std::string prefix = "normlab: error: ";
      const size_t at = printed.rfind(prefix);
      std::string message = at == std::string::npos ? "<no error line> " + printed : printed.substr(at + prefix.size());
      if (!message.empty() && message.back() == '\n') message.pop_back();
      message = in.in_stored_terms(message);
      if (const char* print = std::getenv("NORMLAB_BATTERY_PRINT")) {  // to remake the stored lines
        std::ofstream(print, std::ios::app) << "$ " << c.args << "\n" << r.status << " " << message << "\n";
        fs::remove_all(out);
        continue;
      }
      BOOST_TEST(r.status != 137, "killed after " << kLimitSeconds << " s: a hang");
      BOOST_TEST((r.status == 1 || r.status == 2), "exit status " << r.status << " (1 or 2 expected), stderr: " << printed);
      BOOST_TEST_REQUIRE(at != std::string::npos, "no \"normlab: error:\" line: " << printed);
      const size_t space = c.want.find(' ');
      BOOST_TEST(std::to_string(r.status) == c.want.substr(0, space));
      BOOST_TEST(message.find(c.want.substr(space + 1)) != std::string::npos,
                 "the message lacks \"" << c.want.substr(space + 1) << "\": " << message);
      BOOST_TEST(message.find('\n') == std::string::npos, "more than one line: " << message);
      for (const char* jargon : {"std::", "bad_alloc", "stod", "stoll", "basic_string", "vector::", "terminate"})
        BOOST_TEST(message.find(jargon) == std::string::npos, "C++ library words: " << message);
      BOOST_TEST(!fs::exists(out), "the refused command left its output folder");
      BOOST_TEST(partial_folders(in.dir()).empty(), "the refused command left a partial folder");
      BOOST_TEST(seconds < 20.0, "took " << seconds << " s");
      fs::remove_all(out);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bad_input_battery)

BOOST_AUTO_TEST_CASE(sizes_are_checked_before_allocating) { run_section("sizes", 20); }
BOOST_AUTO_TEST_CASE(checkpoints_are_checked_before_building) { run_section("checkpoints", 40); }
BOOST_AUTO_TEST_CASE(special_files_are_refused_without_blocking) { run_section("special files", 12); }
BOOST_AUTO_TEST_CASE(generate_refuses_what_it_cannot_finish) { run_section("generate", 10); }
BOOST_AUTO_TEST_CASE(data_a_model_cannot_learn_from_is_refused) { run_section("data", 15); }
BOOST_AUTO_TEST_CASE(messages_name_the_flags_typed) { run_section("flags", 30); }
BOOST_AUTO_TEST_CASE(resume_refuses_changed_data) { run_section("resume", 4); }

BOOST_AUTO_TEST_CASE(the_battery_holds_at_least_150_cases) {
  size_t n = 0;
  for (const char* s : {"sizes", "checkpoints", "special files", "generate", "data", "flags", "resume"}) n += section(s).size();
  BOOST_TEST(n >= 150u, "the battery holds " << n << " cases");
}

BOOST_AUTO_TEST_SUITE_END()
