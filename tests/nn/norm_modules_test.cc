// The norm modules: PyTorch's reprs and state_dict names, running statistics over several steps
// (hand-computed and PyTorch 1.13 values), train/eval behaviour, gradcheck through the modules'
// own parameters, and every invalid hyper-parameter and input.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/norm.h"
#include "base/format.h"
#include "nn/batchnorm.h"
#include "nn/groupnorm.h"
#include "nn/layernorm.h"
#include "nn/rmsnorm.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::Error;
using normlab::base::py_float;
using normlab::test::check_tensor;

namespace {

template <typename F>
void check_error(F&& f, const std::vector<std::string>& want) {
  try {
    f();
    BOOST_ERROR("no error thrown; expected one containing '" << want[0] << "'");
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& w : want)
      BOOST_TEST(msg.find(w) != std::string::npos, "message '" << msg << "' lacks '" << w << "'");
  }
}

std::vector<std::string> names(const NamedTensors& nt) {
  std::vector<std::string> out;
  for (auto& [n, t] : nt) out.push_back(n);
  return out;
}

void set_values(const Tensor& t, const std::vector<double>& v) {
  NoGradGuard g;
  copy_(t, tensor(v, t.shape(), t.dtype()));
}

// (N, C) or (N, C, L) reference statistics, computed directly from the definitions in double.
struct ChannelStats {
  std::vector<double> mean, biased, unbiased;
};
ChannelStats channel_stats(const Tensor& x) {
  const int64_t N = x.size(0), C = x.size(1), L = x.numel() / (N * C), m = N * L;
  ChannelStats s{std::vector<double>(C), std::vector<double>(C), std::vector<double>(C)};
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t l = 0; l < L; ++l) sum += x.flat((i * C + c) * L + l);
    s.mean[c] = sum / m;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t l = 0; l < L; ++l) ss += std::pow(x.flat((i * C + c) * L + l) - s.mean[c], 2);
    s.biased[c] = ss / m;
    s.unbiased[c] = ss / (m - 1);
  }
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(norm_modules)

// ---- Construction, reprs, state ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(reprs_match_pytorch) {
  // Strings printed by PyTorch 1.13 (RMSNorm: 2.4's extra_repr format).
  BOOST_TEST(LayerNorm({3}).repr() == "LayerNorm((3,), eps=1e-05, elementwise_affine=True)");
  BOOST_TEST(LayerNorm({2, 3}).repr() == "LayerNorm((2, 3), eps=1e-05, elementwise_affine=True)");
  BOOST_TEST(LayerNorm({3}, 1e-6, false).repr() == "LayerNorm((3,), eps=1e-06, elementwise_affine=False)");
  BOOST_TEST(BatchNorm1d(4).repr() == "BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  BOOST_TEST(BatchNorm1d(4, 1e-5, std::nullopt).repr() ==
             "BatchNorm1d(4, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  BOOST_TEST(BatchNorm2d(3, 0.001, 0.01, false, false).repr() ==
             "BatchNorm2d(3, eps=0.001, momentum=0.01, affine=False, track_running_stats=False)");
  BOOST_TEST(GroupNorm(2, 4).repr() == "GroupNorm(2, 4, eps=1e-05, affine=True)");
  BOOST_TEST(GroupNorm(2, 4, 0.001, false).repr() == "GroupNorm(2, 4, eps=0.001, affine=False)");
  BOOST_TEST(RMSNorm({3}).repr() == "RMSNorm((3,), eps=None, elementwise_affine=True)");
  BOOST_TEST(RMSNorm({2, 3}, 1e-6, false).repr() == "RMSNorm((2, 3), eps=1e-06, elementwise_affine=False)");
}

BOOST_AUTO_TEST_CASE(state_dict_names_and_initial_values) {
  using V = std::vector<std::string>;
  BatchNorm1d bn(3);
  BOOST_TEST(names(bn.state_dict()) ==
             (V{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}), boost::test_tools::per_element());
  check_tensor(bn.weight(), {1, 1, 1}, 0, 0);
  check_tensor(bn.bias(), {0, 0, 0}, 0, 0);
  check_tensor(bn.running_mean(), {0, 0, 0}, 0, 0);
  check_tensor(bn.running_var(), {1, 1, 1}, 0, 0);
  BOOST_TEST(bn.num_batches_tracked().dim() == 0);
  BOOST_TEST(bn.num_batches_tracked().item() == 0);
  BOOST_TEST(bn.num_parameters() == 6);
  BOOST_TEST(names(BatchNorm1d(3, 1e-5, 0.1, true, false).state_dict()) == (V{"weight", "bias"}),
             boost::test_tools::per_element());
  BOOST_TEST(names(BatchNorm2d(3, 1e-5, 0.1, false).state_dict()) ==
             (V{"running_mean", "running_var", "num_batches_tracked"}), boost::test_tools::per_element());
  LayerNorm ln({2, 3});
  BOOST_TEST(names(ln.state_dict()) == (V{"weight", "bias"}), boost::test_tools::per_element());
  BOOST_TEST((ln.weight().shape() == Shape{2, 3}));
  BOOST_TEST(names(LayerNorm({3}, 1e-5, true, /*bias=*/false).state_dict()) == V{"weight"},
             boost::test_tools::per_element());
  BOOST_TEST(LayerNorm({3}, 1e-5, false).state_dict().empty());
  BOOST_TEST(names(GroupNorm(2, 4).state_dict()) == (V{"weight", "bias"}), boost::test_tools::per_element());
  BOOST_TEST(GroupNorm(2, 4, 1e-5, false).state_dict().empty());
  BOOST_TEST(names(RMSNorm({3}).state_dict()) == V{"weight"}, boost::test_tools::per_element());
  check_tensor(RMSNorm({3}).weight(), {1, 1, 1}, 0, 0);
}

// ---- BatchNorm running statistics -------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(batchnorm_running_stats_hand_computed) {
  // One channel, batches [1, 3] then [2, 6]: means 2 and 4, unbiased variances 2 and 8.
  BatchNorm1d bn(1);
  bn(tensor({1, 3}, {2, 1}));
  check_tensor(bn.running_mean(), {0.2}, 1e-6, 0);          // 0.9 * 0 + 0.1 * 2
  check_tensor(bn.running_var(), {1.1}, 1e-6, 0);           // 0.9 * 1 + 0.1 * 2
  bn(tensor({2, 6}, {2, 1}));
  check_tensor(bn.running_mean(), {0.58}, 1e-6, 0);         // 0.9 * 0.2 + 0.1 * 4
  check_tensor(bn.running_var(), {1.79}, 1e-6, 0);          // 0.9 * 1.1 + 0.1 * 8
  BOOST_TEST(bn.num_batches_tracked().item() == 2);
  // momentum=None: the plain average of the batches' statistics.
  BatchNorm1d avg(1, 1e-5, std::nullopt);
  avg(tensor({1, 3}, {2, 1}));
  check_tensor(avg.running_mean(), {2}, 1e-6, 0);
  check_tensor(avg.running_var(), {2}, 1e-6, 0);
  avg(tensor({2, 6}, {2, 1}));
  check_tensor(avg.running_mean(), {3}, 1e-6, 0);
  check_tensor(avg.running_var(), {5}, 1e-6, 0);
  avg(tensor({0, 0, 0}, {3, 1}));
  check_tensor(avg.running_mean(), {2}, 1e-6, 0);           // (2 + 4 + 0) / 3
  check_tensor(avg.running_var(), {10.0 / 3}, 1e-6, 0);     // (2 + 8 + 0) / 3
}

BOOST_AUTO_TEST_CASE(batchnorm_running_stats_over_steps) {
  // Random (N, C) and (N, C, L) batches into one module; the expected running stats follow the
  // update rule applied to statistics computed straight from the definitions.
  for (std::optional<double> momentum : {std::optional<double>(0.3), std::optional<double>()}) {
    BOOST_TEST_CONTEXT("momentum " << (momentum ? py_float(*momentum) : "None")) {
      BatchNorm1d bn(4, 1e-5, momentum);
      std::vector<double> rm(4, 0.0), rv(4, 1.0);
      Generator gen(7);
      const std::vector<Shape> shapes = {{8, 4}, {3, 4, 5}, {2, 4}, {16, 4, 1}, {5, 4}};
      for (size_t step = 0; step < shapes.size(); ++step) {
        Tensor x = randn(shapes[step], gen, 2, 3);
        bn(x);
        const ChannelStats s = channel_stats(x);
        const double f = momentum ? *momentum : 1.0 / (step + 1);
        for (int c = 0; c < 4; ++c) {
          rm[c] = (1 - f) * rm[c] + f * s.mean[c];
          rv[c] = (1 - f) * rv[c] + f * s.unbiased[c];
        }
        check_tensor(bn.running_mean(), rm, 1e-5, 1e-6);
        check_tensor(bn.running_var(), rv, 1e-5, 1e-6);
        BOOST_TEST(bn.num_batches_tracked().item() == step + 1);
      }
      // eval: normalized with the running statistics, which no longer change.
      bn.eval();
      Tensor x = randn({3, 4}, gen);
      Tensor y = bn(x);
      std::vector<double> want;
      for (int64_t i = 0; i < 3; ++i)
        for (int c = 0; c < 4; ++c) want.push_back((x.at({i, c}) - rm[c]) / std::sqrt(rv[c] + 1e-5));
      check_tensor(y, want, 1e-5, 1e-5);
      check_tensor(bn.running_mean(), rm, 1e-5, 1e-6);
      BOOST_TEST(bn.num_batches_tracked().item() == shapes.size());
    }
  }
}

BOOST_AUTO_TEST_CASE(batchnorm1d_matches_pytorch) {
  // PyTorch 1.13: BatchNorm1d(3, momentum=m), weight [1.5, 0.5, -1], bias [0.1, -0.2, 0.3], three
  // training steps on the batches below ((4, 3), (2, 3), (2, 3, 2)), each followed by backward of
  // sum(y * g), g = 0.1 * arange - 0.3; the last step's output and input gradient, the accumulated
  // parameter gradients; then eval on the first batch.
  const std::vector<std::vector<double>> xs = {{1, 2, 3, 4, -1, 0.5, 2, 2, 2, 0, 1, -3},
                                               {0.5, 0.1, -0.2, 1.5, 2.5, 3.5},
                                               {1, 2, 3, 4, 5, 6, 0, -1, 2, 7, 1, 1}};
  const std::vector<Shape> shapes = {{4, 3}, {2, 3}, {2, 3, 2}};
  struct Want { std::optional<double> momentum; std::vector<double> rm, rv, eval_y; };
  const std::vector<Want> wants = {
      {0.1, {0.28175, 0.598, 0.524125}, {1.176916, 1.616867, 2.595279},
       {1.093098, 0.3512893, -1.236866, 5.241089, -0.8283597, 0.3149753, 2.475762, 0.3512893, -0.6161292,
        -0.2895655, -0.04192704, 2.487552}},
      {std::nullopt, {1.083333, 2.1, 1.841667}, {1.694444, 3.182222, 6.885833},
       {0.003972769, -0.2280288, -0.141423, 3.460958, -1.068892, 0.8112885, 1.156301, -0.2280288, 0.2396616,
        -1.148356, -0.5083165, 2.145085}}};
  for (const Want& w : wants) {
    BatchNorm1d bn(3, 1e-5, w.momentum);
    set_values(bn.weight(), {1.5, 0.5, -1.0});
    set_values(bn.bias(), {0.1, -0.2, 0.3});
    Tensor x, y;
    for (size_t i = 0; i < xs.size(); ++i) {
      x = tensor(xs[i], shapes[i]);
      x.requires_grad_();
      y = bn(x);
      // weight and bias gradients accumulate over the three steps, as in the PyTorch run
      sum(mul(y, reshape(sub(mul(arange(y.numel()), 0.1), 0.3), y.shape()))).backward();
    }
    check_tensor(y, {0.7708178, 2.112453, -0.4672609, -0.2, -0.4683491, -0.9074057, -0.5708177, -1.912453,
                     -0.7345217, 0.6017825, 1.287877, 1.287877}, 1e-5, 1e-6);
    check_tensor(x.grad(), {-0.3085774, 0.147576, -0.0763603, -0.06681521, 0.05554349, -0.04443435, 0.1744139,
                            -0.01341255, 0.1011772, 0.04199829, 0.01639825, -0.02750742}, 1e-4, 1e-6);
    check_tensor(bn.weight().grad(), {-1.280406, 0.7810685, -1.951806}, 1e-5, 1e-6);
    check_tensor(bn.bias().grad(), {0.5, 1.9, 3.3}, 1e-5, 1e-6);
    check_tensor(bn.running_mean(), w.rm, 1e-5, 1e-6);
    check_tensor(bn.running_var(), w.rv, 1e-5, 1e-6);
    bn.eval();
    check_tensor(bn(tensor(xs[0], shapes[0])), w.eval_y, 1e-5, 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(batchnorm_without_running_stats_uses_batch_stats_in_eval) {
  BatchNorm1d bn(2, 1e-5, 0.1, true, /*track_running_stats=*/false);
  BOOST_TEST(!bn.running_mean().defined());
  bn.eval();
  Tensor x = tensor({1, 10, 3, 30}, {2, 2});
  // per channel: mean 2 / 20, biased var 1 / 100
  check_tensor(bn(x), {-1 / std::sqrt(1 + 1e-5), -10 / std::sqrt(100 + 1e-5), 1 / std::sqrt(1 + 1e-5),
                       10 / std::sqrt(100 + 1e-5)}, 1e-6, 1e-7);
  check_error([&] { bn(tensor({1, 10}, {1, 2})); }, {"Expected more than 1 value per channel when training"});
}

BOOST_AUTO_TEST_CASE(batchnorm2d_is_batchnorm1d_over_flattened_positions) {
  Generator gen(3);
  Tensor x = randn({3, 2, 4, 5}, gen, 1, 2);
  BatchNorm2d bn2(2);
  BatchNorm1d bn1(2);
  check_tensor(bn2(x), bn1(reshape(x, {3, 2, 20})).to_vector(), 0, 0);
  check_tensor(bn2.running_var(), bn1.running_var().to_vector(), 0, 0);
  check_error([&] { bn2(zeros({3, 2, 4})); }, {"BatchNorm2d", "expected 4D input (got 3D input", "[3, 2, 4]"});
  check_error([&] { bn2(zeros({3, 5, 4, 4})); }, {"BatchNorm2d(2)", "(N, 2, H, W)", "[3, 5, 4, 4]"});
}

BOOST_AUTO_TEST_CASE(batchnorm_refused_batch_changes_nothing) {
  BatchNorm1d bn(3);
  bn(tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
  const auto rm = bn.running_mean().to_vector(), rv = bn.running_var().to_vector();
  check_error([&] { bn(zeros({1, 3})); },
              {"Expected more than 1 value per channel when training, got input size [1, 3]"});
  check_error([&] { bn(zeros({4, 2})); }, {"BatchNorm1d(3)", "(N, 3) or (N, 3, L)", "got input of size [4, 2]"});
  check_error([&] { bn(zeros({4, 3, 2, 2})); }, {"expected 2D or 3D input (got 4D input"});
  check_tensor(bn.running_mean(), rm, 0, 0);
  check_tensor(bn.running_var(), rv, 0, 0);
  BOOST_TEST(bn.num_batches_tracked().item() == 1);
  bn.eval();  // eval on one sample is fine: running statistics
  BOOST_CHECK_NO_THROW(bn(zeros({1, 3})));
}

BOOST_AUTO_TEST_CASE(empty_batches) {
  // As PyTorch 1.13: an empty batch gives an empty output; BatchNorm leaves its running statistics
  // as they were but counts the batch.
  BatchNorm1d bn(3);
  BOOST_TEST((bn(zeros({0, 3})).shape() == Shape{0, 3}));
  check_tensor(bn.running_mean(), {0, 0, 0}, 0, 0);
  check_tensor(bn.running_var(), {1, 1, 1}, 0, 0);
  BOOST_TEST(bn.num_batches_tracked().item() == 1);
  BOOST_TEST((LayerNorm({3})(zeros({0, 3})).shape() == Shape{0, 3}));
  BOOST_TEST((GroupNorm(1, 3)(zeros({0, 3, 2})).shape() == Shape{0, 3, 2}));
  BOOST_TEST((RMSNorm({3})(zeros({0, 3})).shape() == Shape{0, 3}));
}

// ---- Other modules' forward -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(groupnorm_matches_pytorch) {
  // PyTorch 1.13: GroupNorm(2, 4), weight [1.5, 0.5, -1, 2], bias [0.1, -0.2, 0.3, 0],
  // x = 0.1 * arange(24)^1.5 as (2, 4, 3), loss sum(y * g), g = 0.1 * arange(24) - 1.
  GroupNorm gn(2, 4);
  set_values(gn.weight(), {1.5, 0.5, -1.0, 2.0});
  set_values(gn.bias(), {0.1, -0.2, 0.3, 0.0});
  std::vector<double> xv(24);
  for (int i = 0; i < 24; ++i) xv[i] = static_cast<float>(0.1 * std::pow(i, 1.5));
  Tensor x = tensor(xv, {2, 4, 3});
  x.requires_grad_();
  Tensor y = gn(x);
  sum(mul(y, reshape(sub(mul(arange(24), 0.1), 1.0), {2, 4, 3}))).backward();
  check_tensor(y, {-1.696628, -1.314433, -0.6156182, -0.1368955, 0.2203096, 0.6254791, 1.70353, 1.190585,
                   0.6395591, 0.4941531, 1.734558, 3.038641, -2.043914, -1.227921, -0.379909, -0.06701466,
                   0.2358762, 0.5483865, 1.739601, 1.183185, 0.6119269, 0.5475954, 1.747279, 2.974546}, 1e-5, 1e-6);
  check_tensor(x.grad(), {-0.2280326, -0.1631958, -0.3612673, 1.053086, 0.2906604, -0.5912473, 0.1339079,
                          0.07338667, 0.0183323, -0.4340964, -0.07673264, 0.2852023, -0.1178042, 0.05162531,
                          0.221665, -0.1206247, -0.05201212, 0.01715058, 0.4892588, -0.3027725, -1.11363, 0.9032593,
                          0.3148804, -0.2909927}, 1e-4, 1e-5);
  check_tensor(gn.weight().grad(), {1.748659, 0.2855816, -1.361974, 3.410225}, 1e-5, 1e-5);
  check_tensor(gn.bias().grad(), {-1.8, 0, 1.8, 3.6}, 1e-5, 1e-5);
}

BOOST_AUTO_TEST_CASE(layernorm_matches_pytorch) {
  // PyTorch 1.13: LayerNorm([2, 3]) with the weight and bias below, x = 0.1 * arange(12)^1.5 as
  // (2, 2, 3), loss sum(y * g), g = 0.1 * arange(12) - 0.5.
  LayerNorm ln({2, 3});
  set_values(ln.weight(), {1.5, 0.5, -1.0, 2.0, 1, 0.25});
  set_values(ln.bias(), {0.1, -0.2, 0.3, 0, 0.5, -0.5});
  std::vector<double> xv(12);
  for (int i = 0; i < 12; ++i) xv[i] = static_cast<float>(0.1 * std::pow(i, 1.5));
  Tensor x = tensor(xv, {2, 2, 3});
  x.requires_grad_();
  Tensor y = ln(x);
  sum(mul(y, reshape(sub(mul(arange(12), 0.1), 0.5), {2, 2, 3}))).backward();
  check_tensor(y, {-1.696628, -0.6714777, 0.7770788, 0.2524179, 1.340619, -0.08726045, -2.005295, -0.6452924,
                   0.6395591, 0.4941531, 1.367279, -0.1201699}, 1e-5, 1e-6);
  check_tensor(x.grad(), {-1.011005, 0.3028142, 1.416697, -0.5741975, -0.05531591, -0.07899302, 0.09579297,
                          -0.04715751, -0.6653084, 0.7237082, 0.2294877, -0.3365232}, 1e-4, 1e-5);
  check_tensor(ln.weight().grad(), {0.4585228, 0.1990652, 0.04125591, 0.07358883, 0.3495775, 0.9115922}, 1e-5, 1e-6);
  check_tensor(ln.bias().grad(), {-0.4, -0.2, 0, 0.2, 0.4, 0.6}, 1e-5, 1e-6);
  // Train and eval are the same for LayerNorm.
  ln.eval();
  check_tensor(ln(x), y.to_vector(), 0, 0);
}

// ---- gradcheck through the modules (float64 modules, parameters as inputs) ------------------------

BOOST_AUTO_TEST_CASE(modules_gradcheck) {
  Generator gen(11);
  auto input = [&](const Shape& s) {
    Tensor x = randn(s, gen, 0.5, 1.5, DType::Float64);
    x.requires_grad_();
    return x;
  };
  auto perturb = [&](Module& m) {  // parameters away from 1 and 0, so their gradients matter
    for (const Tensor& p : m.parameters()) set_values(p, randn(p.shape(), gen, 0.5, 1, DType::Float64).to_vector());
  };
  auto check_module = [&](Module& m, const Tensor& x) {
    perturb(m);
    std::vector<Tensor> in{x};
    for (const Tensor& p : m.parameters()) in.push_back(p);
    BOOST_TEST(gradcheck([&](const std::vector<Tensor>&) { return m(x); }, in));
  };
  LayerNorm ln1({4}, 1e-5, true, true, DType::Float64);
  check_module(ln1, input({3, 4}));
  LayerNorm ln2({2, 3}, 1e-5, true, true, DType::Float64);
  check_module(ln2, input({2, 2, 3}));
  LayerNorm ln3({3}, 1e-5, false, true, DType::Float64);
  check_module(ln3, input({2, 3}));
  BatchNorm1d bn(3, 1e-5, 0.1, true, true, DType::Float64);
  check_module(bn, input({4, 3}));
  check_module(bn, input({2, 3, 3}));
  bn.eval();
  check_module(bn, input({2, 3}));
  BatchNorm2d bn2(2, 1e-5, 0.1, true, true, DType::Float64);
  check_module(bn2, input({2, 2, 2, 2}));
  GroupNorm gn(2, 4, 1e-5, true, DType::Float64);
  check_module(gn, input({2, 4, 2}));
  RMSNorm rms({3}, std::nullopt, true, DType::Float64);
  check_module(rms, input({3, 3}));
}

// ---- Invalid hyper-parameters and inputs ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(invalid_hyper_parameters) {
  check_error([] { LayerNorm({3}, 0); }, {"LayerNorm", "eps", "> 0", "0.0"});
  check_error([] { LayerNorm({3}, -1e-5); }, {"eps", "-1e-05"});
  check_error([] { LayerNorm({}); }, {"LayerNorm", "normalized_shape", "()"});
  check_error([] { LayerNorm({3, 0}); }, {"positive sizes", "(3, 0)"});
  check_error([] { BatchNorm1d(0); }, {"BatchNorm1d", "num_features must be positive, got 0"});
  check_error([] { BatchNorm2d(-2); }, {"BatchNorm2d", "got -2"});
  check_error([] { BatchNorm1d(4, 0); }, {"BatchNorm1d", "eps", "0.0"});
  check_error([] { BatchNorm1d(4, 1e-5, 1.5); }, {"momentum (the running-average factor) must be in [0, 1]", "1.5"});
  check_error([] { BatchNorm1d(4, 1e-5, -0.1); }, {"momentum", "-0.1"});
  check_error([] { GroupNorm(4, 6); }, {"num_channels must be divisible by num_groups", "num_channels=6",
                                        "num_groups=4"});
  check_error([] { GroupNorm(0, 6); }, {"num_groups must be positive, got 0"});
  check_error([] { GroupNorm(2, 4, -1); }, {"GroupNorm", "eps"});
  check_error([] { RMSNorm({3}, 0.0); }, {"RMSNorm", "eps"});
  check_error([] { RMSNorm({}); }, {"RMSNorm", "normalized_shape"});
  check_error([] { BatchNorm1d(4, 1e-5, std::nan("")); }, {"momentum (the running-average factor) must be in [0, 1]", "nan"});
  BOOST_CHECK_NO_THROW(BatchNorm1d(4, 1e-5, 0.0));  // the ends of [0, 1] are allowed
  BOOST_CHECK_NO_THROW(BatchNorm1d(4, 1e-5, 1.0));
}

// The ends of BatchNorm's momentum range, as PyTorch 1.13 computes them for this batch: 1 keeps the
// last batch's statistics (means 2 and 4, unbiased variances 2 and 8), 0 keeps the initial ones.
BOOST_AUTO_TEST_CASE(batchnorm_momentum_one_keeps_the_last_batch_and_zero_freezes) {
  BatchNorm1d one(2, 1e-5, 1.0), zero(2, 1e-5, 0.0);
  for (BatchNorm1d* bn : {&one, &zero}) {
    bn->train();
    (*bn)(tensor({5, -1, 7, 9}, {2, 2}));  // a first batch, overwritten (momentum 1) or ignored (0)
    (*bn)(tensor({1, 2, 3, 6}, {2, 2}));
  }
  check_tensor(one.running_mean(), {2, 4});
  check_tensor(one.running_var(), {2, 8});
  check_tensor(zero.running_mean(), {0, 0});
  check_tensor(zero.running_var(), {1, 1});
  BOOST_TEST(one.num_batches_tracked().item() == 2.0);
}

BOOST_AUTO_TEST_CASE(wrong_input_shapes_name_both_shapes) {
  LayerNorm ln({3});
  check_error([&] { ln(zeros({2, 4})); },
              {"Given normalized_shape=[3], expected input with shape [*, 3], but got input of size [2, 4]"});
  LayerNorm ln2({1, 3});
  check_error([&] { ln2(zeros({2, 3})); }, {"[*, 1, 3]", "[2, 3]"});
  GroupNorm gn(2, 4);
  check_error([&] { gn(zeros({2, 6, 3})); }, {"GroupNorm(2, 4)", "(N, 4, *)", "[2, 6, 3]"});
  check_error([&] { gn(zeros({4})); }, {"(N, 4, *)", "[4]"});
  RMSNorm rms({2, 3});
  check_error([&] { rms(zeros({3, 2})); }, {"[*, 2, 3]", "[3, 2]"});
  BatchNorm1d bn(4);
  check_error([&] { bn(zeros({8, 3})); }, {"BatchNorm1d(4)", "(N, 4)", "[8, 3]"});
  check_error([&] { bn(zeros({8})); }, {"expected 2D or 3D input (got 1D input"});
  check_error([&] { bn(zeros({8, 4}, DType::Float64)); }, {"float64", "float32"});
}

// An undefined input is a clear error naming the module (its message is built only on failure).
BOOST_AUTO_TEST_CASE(undefined_input_is_a_clear_error) {
  BatchNorm1d bn(4);
  check_error([&] { bn(Tensor()); }, {"BatchNorm1d", "the input is an undefined tensor"});
  GroupNorm gn(2, 4);
  check_error([&] { gn(Tensor()); }, {"GroupNorm: the input is an undefined tensor"});
  LayerNorm ln({3});
  check_error([&] { ln(Tensor()); }, {"the input is an undefined tensor"});
}

// set_momentum(nullopt) after reset_running_stats() turns the running statistics into the plain
// average of the batches that follow (what precise BN relies on), and bad momenta are refused.
BOOST_AUTO_TEST_CASE(batchnorm_set_momentum_cumulative_average) {
  BatchNorm1d bn(2);
  bn.train();
  bn(tensor({1, 10, 3, 20}, {2, 2}));  // an EMA step with momentum 0.1
  bn.reset_running_stats();
  bn.set_momentum(std::nullopt);
  BOOST_TEST(!bn.momentum().has_value());
  // Batch means: (2, 15) then (6, 5); unbiased variances: (2, 50) then (8, 50).
  bn(tensor({1, 10, 3, 20}, {2, 2}));
  bn(tensor({4, 0, 8, 10}, {2, 2}));
  check_tensor(bn.running_mean(), {4, 10});
  check_tensor(bn.running_var(), {5, 50});
  BOOST_TEST(bn.num_batches_tracked().item() == 2.0);
  bn.set_momentum(0.25);
  BOOST_TEST(*bn.momentum() == 0.25);
  BOOST_CHECK_EXCEPTION(bn.set_momentum(1.5), Error, [](const Error& e) {
    return std::string(e.what()).find("momentum (the running-average factor) must be in [0, 1]") != std::string::npos;
  });
  BOOST_TEST(*bn.momentum() == 0.25);
}

BOOST_AUTO_TEST_SUITE_END()
