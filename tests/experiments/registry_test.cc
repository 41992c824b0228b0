// The layer registry: a norm added with its module and one register_norm call is accepted by the
// command line, built into the models, trained by `normlab compare` and named in its report; the
// built-in entries build the modules they name; unknown names are clear errors.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "experiments/commands/cli.h"
#include "experiments/models/model.h"
#include "experiments/registry/layers.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace fs = std::filesystem;
using namespace normlab;
using namespace normlab::experiments;
using normlab::test::read_file;
using normlab::test::run_normlab;
using normlab::test::TempDir;

namespace {

// A throwaway norm: each row divided by its root mean square, with one learned scale per feature
// and no shift. Written from autograd ops only, as a newcomer would.
class ScaleOnlyNorm : public nn::Module {
 public:
  explicit ScaleOnlyNorm(int64_t features) { scale_ = register_parameter("scale", autograd::ones({features})); }
  autograd::Tensor forward(const autograd::Tensor& x) override {
    using namespace autograd;
    return x / sqrt(mean(square(x), {1}, true) + 1e-5) * scale_;
  }
  std::string repr() const override { return "ScaleOnlyNorm(" + std::to_string(scale_.numel()) + ")"; }

 private:
  autograd::Tensor scale_;
};

void register_scale_norm_once() {
  static const bool done = [] {
    register_norm({.name = "scale",
                   .display = "ScaleOnlyNorm",
                   .make = [](const LayerSpec& s) { return std::make_shared<ScaleOnlyNorm>(s.features); }});
    return true;
  }();
  (void)done;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(registry)

BOOST_AUTO_TEST_CASE(a_registered_norm_runs_in_compare_and_is_named_in_the_report) {
  register_scale_norm_once();
  TempDir dir;
  const fs::path out = dir.path() / "out";
  BOOST_REQUIRE_EQUAL(run_normlab({"compare", "--quick", "--quiet", "--norms", "none,scale", "--seeds", "0", "--epochs",
                                   "2", "--out", out.string()}),
                      0);
  const std::string summary = read_file(out / "summary.csv");
  BOOST_TEST(summary.find("\nscale,1,0,") != std::string::npos, summary);  // one run, not diverged
  const std::string report = read_file(out / "report.md");
  BOOST_TEST(report.find("| ScaleOnlyNorm |") != std::string::npos, report);
  // Its activations were recorded after the norm (through the module's forward hook).
  BOOST_TEST(read_file(out / "activations.csv").find(",scale,relu,0,2,32,0.1,0.9,0,10,cosine,0,0,post,") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(built_in_entries_build_what_they_name) {
  autograd::Generator gen(0);
  const std::vector<std::pair<std::string, std::string>> want{
      {"batch", "BatchNorm1d(16"}, {"layer", "LayerNorm((16,)"}, {"group", "GroupNorm(4, 16"}, {"rms", "RMSNorm((16,)"}};
  for (const auto& [name, repr] : want) {
    const Model m = build_model({.inputs = 3, .hidden = {16}, .outputs = 2, .norm = name, .groups = 4}, gen);
    BOOST_TEST_CONTEXT(name) {
      BOOST_REQUIRE_EQUAL(m.net->size(), 4);  // Linear, norm, ReLU, Linear
      BOOST_TEST(m.net->at(1)->repr().rfind(repr, 0) == 0, m.net->at(1)->repr());
      BOOST_TEST(m.probes.size() == 3u);  // pre, post, act
    }
  }
  const Model none = build_model({.inputs = 3, .hidden = {16}, .outputs = 2, .norm = "none"}, gen);
  BOOST_TEST(none.net->size() == 3);
  BOOST_REQUIRE_EQUAL(none.probes.size(), 2u);
  BOOST_TEST((none.probes[0].where == std::vector<std::string>{"pre", "post"}));
  BOOST_REQUIRE_EQUAL(none.weights.size(), 2u);
  BOOST_TEST(none.weights[0].first == "0.weight");
  BOOST_TEST(none.weights[1].first == "2.weight");
  BOOST_TEST(norm("batch").batch_statistics);
  BOOST_TEST(!norm("layer").batch_statistics);
  // GroupNorm's number of groups is in the checkpoint metadata.
  BOOST_TEST(checkpoint_metadata({.inputs = 3, .hidden = {16}, .outputs = 2, .norm = "group", .groups = 4})
                 .at("norm.num_groups") == "4");
}

BOOST_AUTO_TEST_CASE(unknown_and_duplicate_names_are_clear_errors) {
  BOOST_CHECK_EXCEPTION(norm("weird"), Error, [](const Error& e) {
    return std::string(e.what()).find("unknown norm 'weird' (expected one of: none, batch, layer, group, rms") == 0;
  });
  BOOST_CHECK_EXCEPTION(activation("swish"), Error, [](const Error& e) {
    return std::string(e.what()) == "unknown activation 'swish' (expected one of: relu, tanh, gelu, sigmoid)";
  });
  BOOST_CHECK_THROW(register_norm({.name = "batch", .make = [](const LayerSpec&) { return nullptr; }}), Error);
}

BOOST_AUTO_TEST_SUITE_END()
