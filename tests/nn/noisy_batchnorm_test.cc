// NoisyBatchNorm: its output is BatchNorm's times a per-unit scale plus a per-unit shift, drawn from
// the stated distributions anew at each training step and repeated exactly when its buffers are put
// back; evaluation is BatchNorm's times the noise's expectation; its names, repr, errors and gradients.
// The same noise after each BatchNorm of the recurrent BatchNorm LSTM and over a GPT's tokens.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "base/error.h"
#include "nn/batchnorm.h"
#include "nn/bn_lstm.h"
#include "nn/noisy_batchnorm.h"
#include "nn/transformer.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::test::expect_error;
using normlab::test::random_input;

namespace {

// The per-channel (scale, shift) that turn BatchNorm's output y into the noisy one z = s y + m,
// recovered from two samples of each channel: s = (z1 - z0) / (y1 - y0), m = z0 - s y0.
std::vector<std::pair<double, double>> recovered_noise(const Tensor& y, const Tensor& z) {
  const int64_t C = y.size(1), L = y.numel() / (y.size(0) * C);
  std::vector<std::pair<double, double>> out;
  for (int64_t c = 0; c < C; ++c) {
    const int64_t i0 = c * L, i1 = (C + c) * L;  // sample 0 and sample 1, first position
    const double s = (z.flat(i1) - z.flat(i0)) / (y.flat(i1) - y.flat(i0));
    out.emplace_back(s, z.flat(i0) - s * y.flat(i0));
  }
  return out;
}

// The noise step buffer of a noisy module.
Tensor noise_step(const Module& m) {
  for (const auto& [name, t] : m.state_dict())
    if (name == "noise_step") return t;
  throw normlab::Error("no noise_step");
}

// gradcheck of a noisy module (float64) in x and its parameters, every evaluation with the noise
// of step 0 (the step count put back first).
bool gradcheck_one_step(Module& noisy, const Tensor& x) {
  const Tensor step = noise_step(noisy);
  std::vector<Tensor> in{x};
  for (const Tensor& p : noisy.parameters()) in.push_back(p);
  return gradcheck([&](const std::vector<Tensor>&) {
    step.set_flat(0, 0);
    return noisy(x);
  }, in);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(noisy_batchnorm)

BOOST_AUTO_TEST_CASE(output_is_batchnorm_scaled_and_shifted_per_unit_within_the_bounds) {
  for (bool image : {false, true}) {
    NoisyBatchNorm noisy(5, image, 42);
    BatchNorm1d plain1(5);
    BatchNorm2d plain2(5);
    BatchNorm& plain = image ? static_cast<BatchNorm&>(plain2) : plain1;
    const Tensor x = image ? random_input({6, 5, 3, 2}, 1).to(DType::Float32) : random_input({6, 5}, 1).to(DType::Float32);
    std::vector<std::vector<std::pair<double, double>>> steps;
    for (int step = 0; step < 3; ++step) {
      const Tensor y = plain(x), z = noisy(x);
      const auto noise = recovered_noise(y, z);
      for (const auto& [s, m] : noise) {
        BOOST_TEST(s >= 0.5 - 1e-4);
        BOOST_TEST(s < 2.0 + 1e-4);
        BOOST_TEST(m >= -0.5 - 1e-4);
        BOOST_TEST(m < 1.5 + 1e-4);
      }
      // Every value of a channel gets the same scale and shift: z = s y + m everywhere.
      const int64_t C = 5, L = x.numel() / (6 * C);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const auto [s, m] = noise[static_cast<size_t>((i / L) % C)];
        BOOST_TEST(std::abs(z.flat(i) - (s * y.flat(i) + m)) < 1e-4);
      }
      steps.push_back(noise);
      // The running statistics are BatchNorm's: the noise comes after the normalization.
      normlab::test::expect_elements_close("running_mean", noisy.running_mean().to_vector(),
                                           plain.running_mean().to_vector(), 0, 0);
      normlab::test::expect_elements_close("running_var", noisy.running_var().to_vector(),
                                           plain.running_var().to_vector(), 0, 0);
    }
    // New noise at every step, in every unit.
    for (size_t c = 0; c < 5; ++c) {
      BOOST_TEST(steps[0][c].first != steps[1][c].first);
      BOOST_TEST(steps[1][c].second != steps[2][c].second);
    }
      BOOST_TEST(noisy.state_dict().back().second.item() == 3.0);
  }
}

BOOST_AUTO_TEST_CASE(the_noise_has_the_stated_moments) {
  // 4000 steps of 8 units: the scale's mean 1.25 and variance 0.1875, the shift's 0.5 and 1/3.
  NoisyBatchNorm noisy(8, false, 7);
  BatchNorm1d plain(8);
  const Tensor x = random_input({4, 8}, 2).to(DType::Float32);
  const Tensor y = plain(x);
  double ss = 0, ss2 = 0, sm = 0, sm2 = 0;
  int64_t n = 0;
  NoGradGuard no_grad;
  for (int step = 0; step < 4000; ++step)
    for (const auto& [s, m] : recovered_noise(y, noisy(x))) ss += s, ss2 += s * s, sm += m, sm2 += m * m, ++n;
  const double ms = ss / n, mm = sm / n;
  BOOST_TEST(std::abs(ms - 1.25) < 0.01);
  BOOST_TEST(std::abs(ss2 / n - ms * ms - 0.1875) < 0.01);
  BOOST_TEST(std::abs(mm - 0.5) < 0.02);
  BOOST_TEST(std::abs(sm2 / n - mm * mm - 1.0 / 3) < 0.02);
}

BOOST_AUTO_TEST_CASE(restoring_the_buffers_repeats_the_step_exactly) {
  NoisyBatchNorm noisy(4, false, 3);
  const Tensor x = random_input({5, 4}, 3).to(DType::Float32);
  noisy(x);
  NamedTensors saved;
  for (const auto& [name, t] : noisy.state_dict()) saved.emplace_back(name, t.detach().clone());
  const std::vector<double> first = noisy(x).to_vector();
  BOOST_TEST(noisy(x).to_vector() != first);  // the next step's noise differs
  noisy.load_state_dict(saved);
  const std::vector<double> again = noisy(x).to_vector();
  BOOST_TEST(again == first, boost::test_tools::per_element());
  // Another seed, another noise.
  NoisyBatchNorm other(4, false, 4);
  other.load_state_dict(saved);
  BOOST_TEST(other(x).to_vector() != first);
}

BOOST_AUTO_TEST_CASE(evaluation_is_the_noise_s_expectation_on_batchnorm_with_running_statistics) {
  NoisyBatchNorm noisy(3, true, 9);
  BatchNorm2d plain(3);
  const Tensor x = random_input({4, 3, 2, 2}, 4).to(DType::Float32);
  for (int i = 0; i < 3; ++i) noisy(x), plain(x);
  noisy.eval(), plain.eval();
  const Tensor t = random_input({2, 3, 2, 2}, 5).to(DType::Float32);
  const std::vector<double> z = noisy(t).to_vector(), y = plain(t).to_vector();
  for (size_t i = 0; i < z.size(); ++i) BOOST_TEST(z[i] == 1.25 * y[i] + 0.5, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(noisy.state_dict().back().second.item() == 3.0);  // evaluation draws no noise
  // Training mode with the noise off is the same transform, with the batch's statistics.
  noisy.train(), plain.train(), noisy.set_noise_enabled(false);
  const std::vector<double> zt = noisy(t).to_vector(), yt = plain(t).to_vector();
  for (size_t i = 0; i < zt.size(); ++i) BOOST_TEST(zt[i] == 1.25 * yt[i] + 0.5, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(noisy.state_dict().back().second.item() == 3.0);
}

BOOST_AUTO_TEST_CASE(repr_names_and_errors) {
  NoisyBatchNorm noisy(4, false, 0);
  BOOST_TEST(noisy.repr() == "NoisyBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, "
                             "scale=U[0.5, 2.0), shift=U[-0.5, 1.5))");
  std::vector<std::string> names;
  for (const auto& [n, t] : noisy.state_dict()) names.push_back(n);
  BOOST_TEST(names == (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked",
                                                "noise_step"}),
             boost::test_tools::per_element());
  expect_error([] { NoisyBatchNorm(4, false, 0, {.scale_lo = 2, .scale_hi = 1}); },
               {"NoisyBatchNorm: the scale's bounds must be finite with lo < hi, got [2.0, 1.0)"});
  expect_error([] { NoisyBatchNorm(4, false, 0, {.shift_lo = 0, .shift_hi = INFINITY}); }, {"the shift's bounds"});
  expect_error([] { NoisyBatchNorm(0, false, 0); }, {"num_features must be positive"});
  expect_error([&] { noisy(zeros({2, 4, 3, 3})); }, {"NoisyBatchNorm: expected 2D or 3D input (got 4D input"});
  expect_error([&] { noisy(zeros({2, 3})); }, {"NoisyBatchNorm(4): expected input of shape (N, 4) or (N, 4, L)"});
  NoisyBatchNorm image(2, true, 0);
  expect_error([&] { image(zeros({2, 2})); }, {"NoisyBatchNorm: expected 4D input (got 2D input"});
}

BOOST_AUTO_TEST_CASE(gradcheck_with_the_noise_of_one_step) {
  // float64; each evaluation puts the step count back, so that every one has the same noise.
  NoisyBatchNorm noisy(3, false, 5);
  noisy.to(DType::Float64);
  BOOST_TEST(gradcheck_one_step(noisy, random_input({4, 3, 2}, 6)));
}

// A BatchNormLSTM (float64, 2 layers) with or without the noise, its weights drawn from seed 7.
BatchNormLSTM bn_lstm(std::optional<NoiseOptions> noise) {
  Generator gen(7);
  return BatchNormLSTM(3, 4, gen, {.num_layers = 2, .batch_first = true, .max_steps = 5, .gamma_init = 0.5,
                                   .dtype = DType::Float64, .noise = noise, .noise_seed = 11});
}

// Adds `add` to, and multiplies by `mul`, every value of the parameters whose names contain `part`.
void edit(Module& m, const std::string& part, double mul, double add) {
  for (const auto& [name, t] : m.named_parameters())
    if (name.find(part) != std::string::npos)
      for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, t.flat(i) * mul + add);
}

BOOST_AUTO_TEST_CASE(the_recurrent_variant_scales_and_shifts_each_of_its_three_batchnorms) {
  const Tensor x = random_input({4, 5, 3}, 8);
  // A scale of (almost exactly) 2 on every unit: the plain cell with every BatchNorm's gain and
  // BN_c's shift doubled.
  for (bool training : {true, false}) {
    BOOST_TEST_CONTEXT((training ? "training" : "eval")) {
      BatchNormLSTM noisy = bn_lstm(NoiseOptions{.scale_lo = 2, .scale_hi = 2 + 1e-13, .shift_lo = 0, .shift_hi = 1e-13});
      BatchNormLSTM plain = bn_lstm(std::nullopt);
      edit(plain, "bn_", 2, 0);
      noisy.train(training), plain.train(training);
      normlab::test::expect_elements_close("scale 2", noisy(x).to_vector(), plain(x).to_vector(), 1e-10, 1e-12);
      // A shift of 0.5 on every unit: the gates get 0.5 from BN_ih and 0.5 from BN_hh (the bias
      // plus 1), BN_c's output 0.5 more.
      BatchNormLSTM shifted = bn_lstm(NoiseOptions{.scale_lo = 1, .scale_hi = 1 + 1e-13, .shift_lo = 0.5,
                                                   .shift_hi = 0.5 + 1e-13});
      BatchNormLSTM moved = bn_lstm(std::nullopt);
      edit(moved, "bias_l", 1, 1.0);
      edit(moved, "bn_c_l0.bias", 1, 0.5);
      edit(moved, "bn_c_l1.bias", 1, 0.5);
      shifted.train(training), moved.train(training);
      normlab::test::expect_elements_close("shift 0.5", shifted(x).to_vector(), moved(x).to_vector(), 1e-10, 1e-12);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_recurrent_variant_draws_anew_each_step_and_repeats_when_restored) {
  const Tensor x = random_input({4, 5, 3}, 9);
  BatchNormLSTM noisy = bn_lstm(NoiseOptions{});
  BatchNormLSTM plain = bn_lstm(std::nullopt);
  BOOST_TEST(noisy.state_dict().size() == plain.state_dict().size() + 1);  // noise_step
  std::vector<std::vector<double>> buffers;
  for (const auto& [name, t] : noisy.state_dict()) buffers.push_back(t.to_vector());
  const std::vector<double> first = noisy(x).to_vector();
  const std::vector<double> second = noisy(x).to_vector();
  BOOST_TEST(first != second);                  // the noise moved on
  BOOST_TEST(first != plain(x).to_vector());    // and it is not the plain cell
  BOOST_TEST(noise_step(noisy).item() == 2.0);
  size_t i = 0;
  for (const auto& [name, t] : noisy.state_dict()) {
    const std::vector<double>& v = buffers[i++];
    for (int64_t k = 0; k < t.numel(); ++k) t.set_flat(k, v[static_cast<size_t>(k)]);
  }
  BOOST_TEST(noisy(x).to_vector() == first);  // the same step again
  noisy.eval();
  const std::vector<double> e1 = noisy(x).to_vector();
  BOOST_TEST(noisy(x).to_vector() == e1);  // eval draws nothing
  BOOST_TEST(noise_step(noisy).item() == 1.0);  // one training forward since the restore
  BOOST_TEST(noisy.repr().find("noise=(scale=U[0.5, 2.0), shift=U[-0.5, 1.5))") != std::string::npos, noisy.repr());
  expect_error([] { bn_lstm(NoiseOptions{.scale_lo = 1, .scale_hi = 1}); },
               {"BatchNormLSTM: the scale's bounds must be finite with lo < hi, got [1.0, 1.0)"});
}

BOOST_AUTO_TEST_CASE(gradcheck_of_the_recurrent_variant_with_the_noise_of_one_step) {
  BatchNormLSTM noisy = bn_lstm(NoiseOptions{});
  BOOST_TEST(gradcheck_one_step(noisy, random_input({3, 4, 3}, 10)));
}

BOOST_AUTO_TEST_CASE(the_token_variant_is_noisy_batchnorm_over_the_b_t_tokens) {
  const Tensor x = random_input({2, 3, 4}, 12);  // (B, T, C)
  TokenNoisyBatchNorm tokens(4, 13);
  NoisyBatchNorm flat(4, false, 13);
  tokens.to(DType::Float64), flat.to(DType::Float64);
  for (bool training : {true, true, false}) {
    tokens.train(training), flat.train(training);
    const Tensor y = tokens(x);
    BOOST_TEST(y.shape() == x.shape());
    BOOST_TEST(y.to_vector() == reshape(flat(reshape(x, {6, 4})), {2, 3, 4}).to_vector());
  }
  BOOST_TEST(block_norm_name(parse_block_norm("noisybatch")) == "noisybatch");
  BOOST_TEST(has_batch_statistics(BlockNorm::NoisyBatch));
  BOOST_TEST(!has_batch_statistics(BlockNorm::Layer));
  expect_error([&] { tokens(zeros({6, 4})); }, {"TokenNoisyBatchNorm(4): expected input of shape (B, T, 4)"});
}

BOOST_AUTO_TEST_SUITE_END()
