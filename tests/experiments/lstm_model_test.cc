// The lstm arch (experiments/models/recurrent.h): its model as PyTorch would print it, the cell each norm
// picks, the errors of flags it cannot take, its checkpoint metadata, and a run from the command line
// on a small CSV file of images read row by row.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "autograd/autograd.h"
#include "base/error.h"
#include "experiments/models/model.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab;
using namespace normlab::experiments;
using normlab::test::run_normlab_quiet;

namespace {

ModelSpec lstm_spec(const std::string& norm, std::vector<int64_t> hidden = {128}) {
  ModelSpec s;
  s.arch = "lstm", s.inputs = 784, s.image = {1, 28, 28}, s.outputs = 10, s.norm = norm, s.hidden = std::move(hidden);
  return s;
}

std::string build_error(const ModelSpec& s) {
  try {
    validate(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lstm_model)

BOOST_AUTO_TEST_CASE(rows_in_last_hidden_state_out) {
  autograd::Generator gen(0);
  const Model m = build_model(lstm_spec("none"), gen);
  BOOST_TEST(m.net->str() ==
             "Sequential(\n"
             "  (0): Unflatten(dim=1, unflattened_size=(28, 28))\n"
             "  (1): LSTM(28, 128, batch_first=True)\n"
             "  (2): LastStep()\n"
             "  (3): Linear(in_features=128, out_features=10, bias=True)\n"
             ")");
  BOOST_TEST(describe(lstm_spec("none")) == "1x28x28-lstm128-10");
  std::vector<std::string> names;
  for (const auto& entry : m.net->state_dict()) names.push_back(entry.first);
  const std::vector<std::string> want = {"1.weight_ih_l0", "1.weight_hh_l0", "1.bias_ih_l0", "1.bias_hh_l0",
                                         "3.weight", "3.bias"};
  BOOST_TEST(names == want, boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(m.weights.size(), 3u);
  BOOST_TEST(m.weights[1].first == "1.weight_hh_l0");
  BOOST_REQUIRE_EQUAL(m.probes.size(), 1u);
  const auto y = (*m.net)(autograd::zeros({3, 784}));
  BOOST_TEST((y.shape() == autograd::Shape{3, 10}));
}

BOOST_AUTO_TEST_CASE(the_norm_picks_the_cell) {
  autograd::Generator gen(0);
  BOOST_TEST(build_model(lstm_spec("layer", {16, 16}), gen).net->str().find("(1): LayerNormLSTM(28, 16, num_layers=2, "
                                                                           "batch_first=True)") != std::string::npos);
  const std::string bn = build_model(lstm_spec("batch"), gen).net->str();
  BOOST_TEST(bn.find("(1): BatchNormLSTM(28, 128, batch_first=True, max_steps=28)") != std::string::npos, bn);
}

BOOST_AUTO_TEST_CASE(what_an_lstm_cannot_be_is_an_error_naming_the_flag) {
  BOOST_TEST(build_error(lstm_spec("group")).find("--norm group is not a norm of an LSTM cell") != std::string::npos);
  ModelSpec rgb = lstm_spec("none");
  rgb.image = {3, 4, 4}, rgb.inputs = 48;
  BOOST_TEST(build_error(rgb).find("needs images of 1 channel") != std::string::npos);
  BOOST_TEST(build_error(lstm_spec("none", {16, 32})).find("got --hidden 16x32") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(checkpoint_metadata_rebuilds_the_model) {
  const ModelSpec s = lstm_spec("batch", {32, 32});
  const auto md = checkpoint_metadata(s);
  BOOST_TEST(md.at("arch") == "lstm");
  BOOST_TEST(md.at("hidden") == "32,32");
  BOOST_TEST(md.at("image_shape") == "1x28x28");
  const ModelSpec back = model_spec_from_metadata(md, "model.safetensors");
  BOOST_TEST(describe(back) == describe(s));
  BOOST_TEST(back.norm == "batch");
}

// Images of 4 rows of 4 pixels whose class is the row holding the bright pixels: the last hidden
// state must remember the early rows. Trained, then evaluated from its checkpoint.
BOOST_AUTO_TEST_CASE(trains_from_the_command_line_and_evaluates_its_checkpoint) {
  test::TempDir dir;
  const auto csv = dir.path() / "rows.csv";
  {
    std::ofstream f(csv);
    for (int i = 0; i < 16; ++i) f << "p" << i << ",";
    f << "label\n";
    autograd::Generator gen(5);
    for (int n = 0; n < 160; ++n) {
      const int row = n % 4;
      for (int i = 0; i < 16; ++i) f << (i / 4 == row ? 1.0 : 0.0) + 0.1 * gen.uniform() << ",";
      f << "row" << row << "\n";
    }
  }
  const auto out = dir.path() / "run";
  for (const std::string norm : {"layer", "batch"}) {
    BOOST_REQUIRE_EQUAL(run_normlab_quiet({"train", "--csv", csv.string(), "--label", "label", "--arch", "lstm",
                                           "--image-shape", "1,4,4", "--hidden", "8", "--norm", norm, "--epochs", "30",
                                           "--out", out.string()}),
                        0);
    const std::string report = test::read_file(out / "report.md");
    BOOST_TEST(report.find("1x4x4-lstm8-4 (norm " + norm + ")") != std::string::npos, report);
    BOOST_REQUIRE_EQUAL(run_normlab_quiet({"eval", "--checkpoint", (out / "model.safetensors").string(), "--csv",
                                           csv.string(), "--out", (dir.path() / "eval").string()}),
                        0);
    const std::string eval = test::read_file(dir.path() / "eval" / "report.md");
    BOOST_TEST(eval.find("accuracy **100%**") != std::string::npos, eval);
  }
}

// Without --hidden the lstm is one layer of 128 (not the data set's MLP widths); --activation, which
// no LSTM cell reads, is refused before anything is written.
BOOST_AUTO_TEST_CASE(default_width_and_no_activation_flag) {
  test::TempDir dir;
  const auto csv = dir.path() / "rows.csv";
  {
    std::ofstream f(csv);
    f << "a,b,c,d,label\n";
    for (int n = 0; n < 20; ++n) f << n % 2 << ",0.5," << (n + 1) % 2 << ",0.25,c" << n % 2 << "\n";
  }
  const auto out = dir.path() / "run";
  const std::vector<std::string> base = {"train", "--csv", csv.string(), "--label", "label", "--arch", "lstm",
                                         "--image-shape", "1,2,2", "--epochs", "1", "--out", out.string()};
  BOOST_REQUIRE_EQUAL(run_normlab_quiet(base), 0);
  const std::string report = test::read_file(out / "report.md");
  BOOST_TEST(report.find("1x2x2-lstm128-2 (norm none)") != std::string::npos, report);
  std::vector<std::string> with_activation = base;
  with_activation.back() = (dir.path() / "refused").string();  // the --out value
  with_activation.insert(with_activation.end(), {"--activation", "tanh"});
  std::string message = "no error";
  try {
    run_normlab_quiet(with_activation);
  } catch (const std::exception& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("--arch lstm takes no --activation") != std::string::npos, message);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "refused"));
}

BOOST_AUTO_TEST_SUITE_END()
