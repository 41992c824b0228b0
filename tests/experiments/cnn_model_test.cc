// Convolutional models of the experiments: the study's CNN as PyTorch would print it, layer strings
// with every kind of layer, the registry's norms on image activations, and a short training run.
#include <boost/test/unit_test.hpp>
#include <string>

#include "autograd/autograd.h"
#include "experiments/models/model.h"
#include "experiments/registry/layers.h"

using namespace normlab;
using namespace normlab::experiments;

namespace {

ModelSpec cnn_spec(const std::string& norm, const std::string& layers = kDefaultCnn) {
  ModelSpec s;
  s.arch = "cnn", s.inputs = 784, s.image = {1, 28, 28}, s.outputs = 10, s.norm = norm, s.layers = layers;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cnn_model)

BOOST_AUTO_TEST_CASE(the_study_cnn_is_pytorchs) {
  autograd::Generator gen(0);
  const Model m = build_model(cnn_spec("batch"), gen);
  // The module tree as PyTorch prints the same nn.Sequential.
  BOOST_TEST(m.net->str() ==
             "Sequential(\n"
             "  (0): Unflatten(dim=1, unflattened_size=(1, 28, 28))\n"
             "  (1): Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
             "  (2): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
             "  (3): ReLU()\n"
             "  (4): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
             "  (5): Conv2d(32, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
             "  (6): BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
             "  (7): ReLU()\n"
             "  (8): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
             "  (9): Flatten(start_dim=1, end_dim=-1)\n"
             "  (10): Linear(in_features=3136, out_features=10, bias=True)\n"
             ")");
  BOOST_TEST(describe(cnn_spec("batch")) == "1x28x28-conv32k3p1-norm-act-maxpool2-conv64k3p1-norm-act-maxpool2-10");
  // Probes: per conv layer its output (pre), the norm's (post), the activation's (act).
  BOOST_REQUIRE_EQUAL(m.probes.size(), 6u);
  BOOST_TEST(m.probes[0].layer == 0);
  BOOST_TEST(m.probes[3].layer == 1);
  BOOST_TEST(m.probes[4].where.front() == "post");
  BOOST_REQUIRE_EQUAL(m.weights.size(), 3u);
  BOOST_TEST(m.weights[0].first == "1.weight");
  BOOST_TEST(m.weights[2].first == "10.weight");
  const auto y = (*m.net)(autograd::zeros({2, 784}));
  BOOST_TEST((y.shape() == autograd::Shape{2, 10}));
}

BOOST_AUTO_TEST_CASE(every_norm_builds_on_images) {
  // The module each norm puts after a Conv2d of 32 channels on 28x28.
  const std::vector<std::pair<std::string, std::string>> want = {
      {"none", "(2): ReLU()"},
      {"batch", "(2): BatchNorm2d(32,"},
      {"layer", "(2): LayerNorm((32, 28, 28), eps=1e-05, elementwise_affine=True)"},
      {"group", "(2): GroupNorm(8, 32, eps=1e-05, affine=True)"},
      {"rms", "(2): RMSNorm((32, 28, 28)"},
      {"instance", "(2): InstanceNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=False)"}};
  for (const auto& [norm, line] : want) {
    autograd::Generator gen(0);
    const Model m = build_model(cnn_spec(norm), gen);
    const std::string s = m.net->str();
    BOOST_TEST(s.find(line) != std::string::npos, norm << ": " << s);
    Model copy = build_model(cnn_spec(norm), gen);
    copy.net->train();
    const auto y = (*copy.net)(autograd::randn({3, 784}, gen));
    BOOST_TEST((y.shape() == autograd::Shape{3, 10}));
  }
}

BOOST_AUTO_TEST_CASE(layer_strings_with_every_kind_of_layer) {
  autograd::Generator gen(0);
  const Model m = build_model(
      cnn_spec("group", "conv16k5s2p2-norm-relu-conv16k3x1d2g4-avgpool3s2p1-act-maxpool2s1-gap-flatten-linear32-norm-tanh"),
      gen);
  const std::string s = m.net->str();
  for (const std::string line : {"Conv2d(1, 16, kernel_size=(5, 5), stride=(2, 2), padding=(2, 2))",
                                 "Conv2d(16, 16, kernel_size=(3, 1), stride=(1, 1), dilation=(2, 2), groups=4)",
                                 "AvgPool2d(kernel_size=3, stride=2, padding=1)",
                                 "MaxPool2d(kernel_size=2, stride=1, padding=0", "AdaptiveAvgPool2d(output_size=1)",
                                 "Linear(in_features=16, out_features=32, bias=True)", "GroupNorm(8, 32",
                                 "Tanh()", "Linear(in_features=32, out_features=10, bias=True)"})
    BOOST_TEST(s.find(line) != std::string::npos, "lacks " << line << ":\n" << s);
  const auto y = (*m.net)(autograd::randn({2, 784}, gen));
  BOOST_TEST((y.shape() == autograd::Shape{2, 10}));
}

BOOST_AUTO_TEST_CASE(checkpoint_metadata_rebuilds_the_model) {
  ModelSpec s = cnn_spec("group");
  s.groups = 4;
  const auto md = checkpoint_metadata(s);
  BOOST_TEST(md.at("arch") == "cnn");
  BOOST_TEST(md.at("layers") == kDefaultCnn);
  BOOST_TEST(md.at("image_shape") == "1x28x28");
  BOOST_TEST(md.at("norm") == "group");
  BOOST_TEST(md.at("norm.num_groups") == "4");
}

BOOST_AUTO_TEST_SUITE_END()
