// nn::StepBatchNorm's and nn::BatchNormLSTM's population statistics (precise BN): reset_running_stats
// and the cumulative mode, whose slot holds the plain average of its updates' batch statistics
// (mean, unbiased variance) computed here directly, untouched slots and the given momentum after.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/bn_lstm.h"

using namespace normlab::autograd;
using namespace normlab::nn;

namespace {

// Column j's mean and unbiased variance of a (B, C) float64 tensor.
std::pair<double, double> column_stats(const Tensor& x, int64_t j) {
  const int64_t b = x.size(0), c = x.size(1);
  double m = 0, v = 0;
  for (int64_t i = 0; i < b; ++i) m += x.data<double>()[i * c + j];
  m /= double(b);
  for (int64_t i = 0; i < b; ++i) v += std::pow(x.data<double>()[i * c + j] - m, 2);
  return {m, v / double(b - 1)};
}

// Buffer `name`'s value at (slot, j).
double buffer_at(const Module& m, const std::string& name, int64_t slot, int64_t j) {
  for (const auto& [n, t] : m.named_buffers())
    if (n == name) return t.data<double>()[slot * t.size(1) + j];
  BOOST_FAIL("no buffer " << name);
  return NAN;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bn_lstm_precise)

BOOST_AUTO_TEST_CASE(cumulative_slots_average_their_batch_statistics) {
  Generator gen(3);
  StepBatchNorm bn(3, 2, true, 0.1, DType::Float64);
  bn.train();
  bn.forward_step(randn({4, 3}, gen, 0, 1, DType::Float64), 1, 0.1, 1e-5);  // running statistics to forget
  bn.reset_running_stats();
  bn.set_cumulative(true);
  std::vector<Tensor> xs;
  for (int k = 0; k < 3; ++k) {
    xs.push_back(randn({4, 3}, gen, double(k), 1 + k, DType::Float64));
    bn.forward_step(xs.back(), 1, 0.1, 1e-5);
  }
  for (int64_t j = 0; j < 3; ++j) {
    double m = 0, v = 0;
    for (const Tensor& x : xs) m += column_stats(x, j).first / 3, v += column_stats(x, j).second / 3;
    BOOST_TEST(buffer_at(bn, "running_mean", 1, j) == m, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(buffer_at(bn, "running_var", 1, j) == v, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(buffer_at(bn, "running_mean", 0, j) == 0.0);  // slot 0 had no update since the reset
    BOOST_TEST(buffer_at(bn, "running_var", 0, j) == 1.0);
  }
  // Off: the momentum given again, r = 0.9 r + 0.1 stat.
  bn.set_cumulative(false);
  const double before = buffer_at(bn, "running_mean", 1, 0);
  const Tensor x = randn({4, 3}, gen, 0, 1, DType::Float64);
  bn.forward_step(x, 1, 0.1, 1e-5);
  BOOST_TEST(buffer_at(bn, "running_mean", 1, 0) == 0.9 * before + 0.1 * column_stats(x, 0).first,
             boost::test_tools::tolerance(1e-12));
}

// The cell resets and averages every BatchNorm it has: after one cumulative training forward, a
// shared slot holds the average over the T steps of each step's statistics, so a second identical
// forward leaves it unchanged (the average of the same T values twice), while the usual momentum,
// which weights the last steps more, moves it.
BOOST_AUTO_TEST_CASE(the_cell_recomputes_every_batchnorm) {
  Generator gen(4);
  BatchNormLSTM cell(2, 3, gen, {.batch_first = true, .max_steps = 5, .shared_statistics = true, .dtype = DType::Float64});
  cell.train();
  const Tensor x = randn({4, 5, 2}, gen, 0, 1, DType::Float64);
  cell.forward(x);
  cell.reset_running_stats();
  for (const auto& [n, t] : cell.named_buffers())
    if (n.find("running_mean") != std::string::npos) BOOST_TEST(t.data<double>()[0] == 0.0, n);
  cell.set_cumulative_statistics(true);
  cell.forward(x);
  std::vector<double> once;
  for (const auto& [n, t] : cell.named_buffers())
    if (n.find("running_") != std::string::npos) once.push_back(t.data<double>()[0]);
  cell.forward(x);
  size_t i = 0;
  for (const auto& [n, t] : cell.named_buffers())
    if (n.find("running_") != std::string::npos) BOOST_TEST(t.data<double>()[0] == once[i++], boost::test_tools::tolerance(1e-12));
  // Off: the momentum 0.1 again, an average weighted towards the last steps, which differs.
  cell.set_cumulative_statistics(false);
  cell.forward(x);
  i = 0;
  double moved = 0;
  for (const auto& [n, t] : cell.named_buffers())
    if (n.find("running_") != std::string::npos) moved = std::max(moved, std::fabs(t.data<double>()[0] - once[i++]));
  BOOST_TEST(moved > 1e-6);
}

BOOST_AUTO_TEST_SUITE_END()
