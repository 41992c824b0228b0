// SyncBatchNorm over the job's ranks (one process, or mpirun -np 2 and 3): each rank holds its
// slice of one global batch; outputs, input gradients, summed weight gradients and running
// statistics must equal BatchNorm's on the whole batch, and the input gradient must match central
// differences of the sum of every rank's loss (float64); second and third derivatives too.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "autograd/autograd.h"
#include "dist/dist.h"
#include "nn/batchnorm.h"
#include "nn/syncbatchnorm.h"
#include "tests/support/compare.h"

using namespace normlab;
using autograd::DType;
using autograd::Tensor;

namespace {

// The global batch (the same on every rank: one seed) and this rank's slice of it.
struct Batch {
  Tensor x, g;  // the whole batch (B, C, *) and the upstream gradient of the loss sum(y g)
  int64_t begin, size;
};

Batch make_batch(const autograd::Shape& shape, DType dtype, uint64_t seed) {
  autograd::Generator gen(seed);
  Batch b;
  b.x = autograd::add(autograd::mul(autograd::randn(shape, gen, 0, 1, dtype), 3.0), 5.0);  // far from 0 mean, 1 std
  b.g = autograd::randn(shape, gen, 0, 1, dtype);
  const int64_t per = shape[0] / dist::world_size();
  b.begin = per * dist::rank(), b.size = per;
  return b;
}

std::vector<double> rows(const Tensor& t, int64_t begin, int64_t n) {
  return autograd::narrow(t, begin, n).clone().to_vector();
}

void check_parity(const autograd::Shape& shape, DType dtype, double rtol, double atol) {
  const int64_t C = shape[1];
  const Batch b = make_batch(shape, dtype, 7);
  autograd::Generator wg(11);
  const Tensor w0 = autograd::randn({C}, wg, 1, 0.5, dtype), b0 = autograd::randn({C}, wg, 0, 0.5, dtype);
  // BatchNorm on the whole batch, in this process.
  nn::BatchNorm1d ref_1d(C, 1e-5, 0.1, true, true, dtype);
  nn::BatchNorm2d ref_2d(C, 1e-5, 0.1, true, true, dtype);
  nn::BatchNorm& ref = shape.size() == 4 ? static_cast<nn::BatchNorm&>(ref_2d) : ref_1d;
  nn::SyncBatchNorm sync(C, 1e-5, 0.1, true, true, dtype);
  for (nn::BatchNorm* m : {&ref, static_cast<nn::BatchNorm*>(&sync)}) {
    autograd::NoGradGuard no_grad;
    autograd::copy_(m->weight(), w0);
    autograd::copy_(m->bias(), b0);
  }
  const Tensor xr = b.x.detach().requires_grad_(), xs = autograd::narrow(b.x, b.begin, b.size).clone();
  xs.requires_grad_();
  for (int step = 0; step < 2; ++step) {  // two steps: the running statistics average over both
    ref.zero_grad();
    sync.zero_grad();
    const Tensor yr = ref(xr), ys = sync(xs);
    autograd::sum(autograd::mul(yr, b.g)).backward();
    autograd::sum(autograd::mul(ys, autograd::narrow(b.g, b.begin, b.size).clone())).backward();
    BOOST_TEST_CONTEXT("step " << step << ", rank " << dist::rank() << " of " << dist::world_size()) {
      normlab::test::expect_elements_close("output", ys.to_vector(), rows(yr, b.begin, b.size), rtol, atol);
      normlab::test::expect_elements_close("input gradient", xs.grad().to_vector(), rows(xr.grad(), b.begin, b.size),
                                           rtol, atol);
      // The weight's and bias's gradients are this rank's part: summed over the ranks, the whole batch's.
      for (auto [mine, whole] : {std::pair{sync.weight().grad(), ref.weight().grad()},
                                 std::pair{sync.bias().grad(), ref.bias().grad()}}) {
        std::vector<double> sum = mine.to_vector();
        dist::allreduce_sum(sum.data(), C);
        normlab::test::expect_elements_close("summed parameter gradient", sum, whole.to_vector(), rtol, atol);
      }
      normlab::test::expect_elements_close("running_mean", sync.running_mean().to_vector(),
                                           ref.running_mean().to_vector(), rtol, atol);
      normlab::test::expect_elements_close("running_var", sync.running_var().to_vector(),
                                           ref.running_var().to_vector(), rtol, atol);
      BOOST_TEST(sync.num_batches_tracked().item() == step + 1);
    }
    xr.set_grad(Tensor());
    xs.set_grad(Tensor());
  }
  // Eval mode is BatchNorm's with the (equal) running statistics.
  ref.eval();
  sync.eval();
  normlab::test::expect_elements_close("eval output", sync(xs).to_vector(), rows(ref(xr), b.begin, b.size), rtol, atol);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(syncbatchnorm)

BOOST_AUTO_TEST_CASE(equals_batchnorm_on_the_global_batch) {
  const int64_t B = 12;  // 12, 6 or 4 samples per rank for 1, 2 or 3 ranks
  check_parity({B, 5}, DType::Float32, 2e-5, 2e-5);
  check_parity({B, 3, 4, 5}, DType::Float32, 2e-5, 2e-5);
  check_parity({B, 5}, DType::Float64, 1e-11, 1e-12);
  check_parity({B, 3, 2, 3}, DType::Float64, 1e-11, 1e-12);
}

BOOST_AUTO_TEST_CASE(input_gradient_matches_central_differences_over_all_ranks) {
  // float64, 4 channels of (N, C, 2): loss = sum over ranks of sum(y_r g_r); rank p's element i is
  // moved by +-h while the other ranks keep theirs, and every rank computes the global loss.
  const int64_t per = 3, C = 4, L = 2;
  const Batch b = make_batch({per * dist::world_size(), C, L}, DType::Float64, 21);
  const Tensor x0 = autograd::narrow(b.x, b.begin, b.size).clone();
  const Tensor g = autograd::narrow(b.g, b.begin, b.size).clone();
  autograd::Generator wg(5);
  const Tensor w = autograd::randn({C}, wg, 1, 0.3, DType::Float64).requires_grad_();
  const Tensor bias = autograd::randn({C}, wg, 0, 0.3, DType::Float64).requires_grad_();
  const auto global_loss = [&](const Tensor& x) {
    autograd::NoGradGuard no_grad;
    double l = autograd::sum(autograd::mul(nn::sync_batch_norm(x, Tensor(), Tensor(), w, bias, 0.1, 1e-5), g)).item();
    dist::allreduce_sum(&l, 1);
    return l;
  };
  const Tensor x = x0.detach().requires_grad_();
  autograd::sum(autograd::mul(nn::sync_batch_norm(x, Tensor(), Tensor(), w, bias, 0.1, 1e-5), g)).backward();
  const std::vector<double> analytic = x.grad().to_vector();
  const double h = 1e-6;
  for (int p = 0; p < dist::world_size(); ++p)
    for (int64_t i = 0; i < x0.numel(); ++i) {
      const auto moved = [&](double by) {
        Tensor xm = x0.detach().clone();
        if (dist::rank() == p) xm.set_flat(i, xm.to_vector()[i] + by);
        return global_loss(xm);
      };
      const double numeric = (moved(h) - moved(-h)) / (2 * h);
      if (dist::rank() == p)
        BOOST_TEST(std::fabs(analytic[i] - numeric) <= 1e-6 + 1e-5 * std::fabs(numeric),
                   "rank " << p << " element " << i << ": analytic " << analytic[i] << ", numeric " << numeric);
    }
}

BOOST_AUTO_TEST_CASE(second_and_third_derivatives_equal_batchnorms_on_the_global_batch) {
  // A gradient penalty through SyncBatchNorm: loss_r = sum(tanh(y_r) g_r) on each rank, gx_r =
  // d (sum of every rank's loss) / d x_r with create_graph, P_r = sum(gx_r^2), then d (sum of every
  // rank's P) / d (x_r, weight, bias): the double backward, whose group means are sums over the
  // ranks (the fused kernel). Then once more, d/dx of sum(d P / d x * c): the formula of recorded
  // ops, its means summed over the ranks by a recorded op (third derivatives). The input's
  // gradients equal BatchNorm's on the whole batch, row for row; the weight's and bias's summed over
  // the ranks equal the whole batch's (each rank's own part differs: only the sum is defined).
  for (const autograd::Shape& shape : {autograd::Shape{12, 3}, autograd::Shape{12, 2, 3, 2}})
    BOOST_TEST_CONTEXT("input " << autograd::shape_str(shape) << ", rank " << dist::rank() << " of "
                                << dist::world_size()) {
      const int64_t C = shape[1];
      const Batch b = make_batch(shape, DType::Float64, 31);
      autograd::Generator wg(13);
      const Tensor w = autograd::randn({C}, wg, 1, 0.3, DType::Float64).requires_grad_();
      const Tensor bias = autograd::randn({C}, wg, 0, 0.3, DType::Float64).requires_grad_();
      const Tensor c = autograd::randn(shape, wg, 0, 1, DType::Float64);
      const autograd::GradOptions graph{.create_graph = true};
      // {d P / d x, d P / d w, d P / d bias, d (sum(d P / d x * c)) / d x} for one side.
      const auto derivatives = [&](const Tensor& x, const Tensor& g, const Tensor& cc, bool sync) {
        const Tensor y = sync ? nn::sync_batch_norm(x, Tensor(), Tensor(), w, bias, 0.1, 1e-5)
                              : autograd::batch_norm(x, Tensor(), Tensor(), w, bias, true, 0.1, 1e-5);
        const Tensor loss = autograd::sum(autograd::mul(autograd::tanh(y), g));
        const Tensor gx = autograd::grad({loss}, {x}, {}, graph)[0];
        const Tensor P = autograd::sum(autograd::mul(gx, gx));
        std::vector<Tensor> d = autograd::grad({P}, {x, w, bias}, {}, graph);
        d.push_back(autograd::grad({autograd::sum(autograd::mul(d[0], cc))}, {x})[0]);
        return d;
      };
      const Tensor xr = b.x.detach().requires_grad_();
      const Tensor xs = autograd::narrow(b.x, b.begin, b.size).clone().requires_grad_();
      const std::vector<Tensor> ref = derivatives(xr, b.g, c, false);
      const std::vector<Tensor> mine = derivatives(xs, autograd::narrow(b.g, b.begin, b.size).clone(),
                                                   autograd::narrow(c, b.begin, b.size).clone(), true);
      normlab::test::expect_elements_close("d P / d x", mine[0].to_vector(), rows(ref[0], b.begin, b.size), 1e-10,
                                           1e-11);
      normlab::test::expect_elements_close("third derivative", mine[3].to_vector(), rows(ref[3], b.begin, b.size),
                                           1e-10, 1e-11);
      for (int k : {1, 2}) {
        std::vector<double> sum = mine[k].to_vector();
        dist::allreduce_sum(sum.data(), C);
        normlab::test::expect_elements_close(k == 1 ? "summed d P / d weight" : "summed d P / d bias", sum,
                                             ref[k].to_vector(), 1e-10, 1e-11);
      }
    }
}

BOOST_AUTO_TEST_CASE(one_value_per_channel_over_all_ranks_is_pytorchs_error) {
  // Rank 0 holds one sample, the others none: one value per channel in the whole batch.
  const int64_t n = dist::rank() == 0 ? 1 : 0;
  nn::SyncBatchNorm sync(3);
  const Tensor x = autograd::zeros({n, 3});
  try {
    sync(x);
    BOOST_ERROR("a global batch of one was normalized");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("Expected more than 1 value per channel when training") != std::string::npos,
               e.what());
  }
  BOOST_TEST(sync.num_batches_tracked().item() == 0);  // a refused batch leaves the module as it was
}

BOOST_AUTO_TEST_SUITE_END()
