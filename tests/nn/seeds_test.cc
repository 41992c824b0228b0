// The worked examples of the seed documents (the tutorials the project grew from) as tests:
// 000 last dim and [1, 3], 001 biased variance, 002 whole [2, 3] sentences, 003 rows with mean 1e4
// where E[x^2] - E[x]^2 in float32 fails, 004 given gamma and beta.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/norm.h"
#include "autograd/norm.h"
#include "nn/layernorm.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::test::check_close;
using normlab::test::check_tensor;

namespace {

void set_values(const Tensor& t, const std::vector<double>& v) {
  NoGradGuard g;
  copy_(t, tensor(v, t.shape(), t.dtype()));
}

// The seeds print 4 decimals: agree to half a unit of the last printed digit.
constexpr double kPrinted = 5e-5;

}  // namespace

BOOST_AUTO_TEST_SUITE(seeds)

// Seed 000: two words of 3 dims, normalized over the last dim; PyTorch prints
// [[0, -1.2238, 1.2238], [1.4140, -0.7070, -0.7070]].
BOOST_AUTO_TEST_CASE(seed000_last_dim) {
  const std::vector<double> want = {0.0, -1.2238, 1.2238, 1.4140, -0.7070, -0.7070};
  Tensor x = tensor({0.2, 0.1, 0.3, 0.5, 0.1, 0.1}, {2, 3});
  LayerNorm ln({3});
  check_tensor(ln(x), want, 0, kPrinted);
  check_tensor(layer_norm(x, {3}), want, 0, kPrinted);
}

// Seed 000's class: the (S, B, E) = (2, 1, 3) tensor normalized over its last two dims [1, 3],
// with gamma and beta of shape (1, 3): the same numbers.
BOOST_AUTO_TEST_CASE(seed000_last_two_dims) {
  Tensor x = tensor({0.2, 0.1, 0.3, 0.5, 0.1, 0.1}, {2, 1, 3});
  LayerNorm ln({1, 3});
  BOOST_TEST((ln.weight().shape() == Shape{1, 3}));
  Tensor y = ln(x);
  BOOST_TEST((y.shape() == Shape{2, 1, 3}));
  check_tensor(y, {0.0, -1.2238, 1.2238, 1.4140, -0.7070, -0.7070}, 0, kPrinted);
}

// Seed 001: statistics over the embedding dim with the *biased* variance (unbiased=False). The
// seed prints the first batch item (7 x 10, rounded to 4 decimals), its per-row mean and variance,
// and the normalized rows.
BOOST_AUTO_TEST_CASE(seed001_biased_variance) {
  const std::vector<double> x = {
      2.3231, -0.3746, 2.6221, 2.2130, -1.3411, 0.1152, -0.6356, -1.3310, -0.4394, 2.4190,
      0.5539, -5.1864, -0.5007, 1.0695, -0.8989, -1.4327, -0.4214, 1.9148, 1.2416, 0.7608,
      -2.2256, -0.2482, 0.4517, -1.5689, 0.4506, -0.1861, 1.5037, -1.0158, -0.2976, -2.1102,
      -0.0212, -0.4272, 2.1284, -0.9909, -0.2254, -0.0528, 0.5645, 0.5093, 0.2662, 2.1440,
      0.3954, -0.0420, -0.1249, -2.8000, 0.8817, 2.2713, 1.8423, -0.6637, -2.0547, 1.2039,
      -1.6732, -0.2235, -0.5283, 1.7224, -1.0452, 0.9322, -1.4510, 0.5735, -0.7763, 0.3509,
      -0.8276, 1.5135, 0.4042, 0.4883, -2.3238, -0.6278, 1.0873, 2.3286, -0.1649, 0.0505};
  const std::vector<double> want = {
      1.1343, -0.5984, 1.3264, 1.0636, -1.2192, -0.2838, -0.7661, -1.2127, -0.6400, 1.1960,
      0.4412, -2.5600, -0.1102, 0.7108, -0.3184, -0.5975, -0.0687, 1.1527, 0.8007, 0.5493,
      -1.4918, 0.2425, 0.8563, -0.9159, 0.8554, 0.2970, 1.7789, -0.4308, 0.1991, -1.3906,
      -0.4218, -0.8389, 1.7862, -1.4180, -0.6316, -0.4544, 0.1798, 0.1230, -0.1266, 1.8022,
      0.1991, -0.0869, -0.1412, -1.8910, 0.5172, 1.4262, 1.1456, -0.4936, -1.4034, 0.7280,
      -1.4083, -0.0112, -0.3050, 1.8640, -0.8031, 1.1025, -1.1941, 0.7568, -0.5440, 0.5423,
      -0.8214, 1.0631, 0.1701, 0.2378, -2.0257, -0.6605, 0.7200, 1.7191, -0.2879, -0.1146};
  const std::vector<double> want_mean = {0.5571, -0.2900, -0.5246, 0.3895, 0.0909, -0.2119, 0.1928};
  const std::vector<double> want_var = {2.4238, 3.6585, 1.3000, 0.9477, 2.3373, 1.0768, 1.5434};
  // The inputs are rounded to 4 decimals, which moves the outputs by up to ~1e-4.
  check_tensor(layer_norm(tensor(x, {7, 10}), {10}), want, 0, 3e-4);
  // The saved statistics: mean, and the biased variance 1/rstd^2 - eps (to 1e-4: the inputs' and
  // the printed values' rounding).
  std::vector<float> xf(x.begin(), x.end()), y(70), mean(7), rstd(7);
  kernels::layer_norm_forward(7, 10, xf.data(), nullptr, nullptr, 1e-5, y.data(), mean.data(), nullptr,
                             rstd.data());
  std::vector<double> var(7);
  for (int i = 0; i < 7; ++i) var[i] = 1.0 / (double(rstd[i]) * rstd[i]) - 1e-5;
  check_close(mean, want_mean, 7, 0, 1e-4);
  check_close(var, want_var, 7, 0, 1e-4);
  // The unbiased variance (x 10/9) would be far off the seed's numbers.
  BOOST_TEST(std::fabs(var[0] * 10 / 9 - want_var[0]) > 0.2);
}

// Seed 002: LayerNorm over the whole (2, 3) sentence (normalized_shape [2, 3]), both sentences
// in one batch; PyTorch prints the values below.
BOOST_AUTO_TEST_CASE(seed002_whole_sentences) {
  Tensor batch = tensor({0.31, 0.14, 0.93, 0.14, 0.88, 0.98,    // "Popcorn popped."
                         0.85, 0.2, 0.14, 0.46, 0.61, 0.49},    // "Tea steeped."
                        {2, 2, 3});
  LayerNorm ln({2, 3});
  check_tensor(ln(batch), {-0.6807, -1.1375, 0.9853, -1.1375, 0.8509, 1.1196,
                           1.6321, -1.0765, -1.3265, 0.0069, 0.6320, 0.1320}, 0, kPrinted);
  // Each sentence alone gives the same numbers: no statistics are shared across the batch.
  check_tensor(ln(narrow(batch, 1, 1)), {1.6321, -1.0765, -1.3265, 0.0069, 0.6320, 0.1320}, 0, kPrinted);
}

// Seed 003: rows of randn(1024) + 1e4 in float32. E[x^2] - E[x]^2 rounds both terms (about 1e8,
// spacing 8 in float32) and returns a multiple of 8 instead of about 1. Our float32 LayerNorm
// matches a float64 computation on the same float32 inputs to 1e-5 relative.
BOOST_AUTO_TEST_CASE(seed003_large_mean_rows) {
  const int64_t rows = 16, n = 1024;
  Generator gen(3);
  Tensor x = randn({rows, n}, gen, 1e4, 1);  // float32
  const float* xp = x.data<float>();
  std::vector<float> y(rows * n), mean(rows), rstd(rows);
  kernels::layer_norm_forward(rows, n, xp, nullptr, nullptr, 1e-5, y.data(), mean.data(), nullptr, rstd.data());
  Tensor y_module = LayerNorm({n})(x);
  for (int64_t i = 0; i < rows; ++i) {
    BOOST_TEST_CONTEXT("row " << i) {
      // float64, two passes, from the definitions.
      double s = 0, ss = 0;
      for (int64_t j = 0; j < n; ++j) s += xp[i * n + j];
      const double mu = s / n;
      for (int64_t j = 0; j < n; ++j) ss += (xp[i * n + j] - mu) * (xp[i * n + j] - mu);
      const double var = ss / n, r = 1 / std::sqrt(var + 1e-5);
      std::vector<double> y64(n);
      for (int64_t j = 0; j < n; ++j) y64[j] = (xp[i * n + j] - mu) * r;
      BOOST_TEST(std::fabs(mean[i] - mu) / mu < 1e-5);
      BOOST_TEST(std::fabs(1 / (double(rstd[i]) * rstd[i]) - 1e-5 - var) / var < 1e-5);
      check_close(y.data() + i * n, y64, n, 1e-5, 1e-5);
      check_close(y_module.data<float>() + i * n, y64, n, 1e-5, 1e-5);
      // The seed's formula in float32, even with exactly summed means (only the means rounded).
      double sx = 0, sx2 = 0;
      for (int64_t j = 0; j < n; ++j) sx += xp[i * n + j], sx2 += double(xp[i * n + j]) * xp[i * n + j];
      const float ex = static_cast<float>(sx / n), ex2 = static_cast<float>(sx2 / n);
      const float naive = ex2 - ex * ex;
      BOOST_TEST(std::fabs(naive - var) / var > 0.5, "E[x^2]-E[x]^2 gave " << naive << " for " << var);
      BOOST_TEST(std::fmod(naive, 8.0f) == 0.0f);
    }
  }
  // The seed's own test: LayerNorm over the last two dims of zeros((2, 3, 2, 4)) keeps the shape
  // and gives zeros (eps keeps 0 / sqrt(0 + eps) finite), with gain of shape (2, 4).
  LayerNorm ln({2, 4});
  BOOST_TEST((ln.weight().shape() == Shape{2, 4}));
  Tensor z = ln(zeros({2, 3, 2, 4}));
  BOOST_TEST((z.shape() == Shape{2, 3, 2, 4}));
  check_tensor(z, std::vector<double>(48, 0.0), 0, 0);
}

// Seed 004: x = [4, 2, 8], gamma = [1.5, 1, 0.5], beta = [0.5, 0, -0.5]. PyTorch gives
// [0.0991, -1.0690, 0.1682]; the tutorial's hand result [0.125, -1.02, 0.135] comes from rounding
// mu and sigma to two decimals, and is not what LayerNorm computes.
BOOST_AUTO_TEST_CASE(seed004_gamma_beta) {
  LayerNorm ln({3});
  set_values(ln.weight(), {1.5, 1.0, 0.5});
  set_values(ln.bias(), {0.5, 0.0, -0.5});
  Tensor y = ln(tensor({4, 2, 8}, {1, 3}));
  check_tensor(y, {0.0991, -1.0690, 0.1682}, 0, kPrinted);
  BOOST_TEST(std::fabs(y.flat(0) - 0.125) > 0.02);
  // By hand, unrounded: mu = 14/3, var = 56/9, xhat = (x - mu) / sqrt(var + eps).
  const double mu = 14.0 / 3, sd = std::sqrt(56.0 / 9 + 1e-5);
  check_tensor(y, {1.5 * (4 - mu) / sd + 0.5, (2 - mu) / sd, 0.5 * (8 - mu) / sd - 0.5}, 1e-6, 1e-6);
}

BOOST_AUTO_TEST_SUITE_END()
