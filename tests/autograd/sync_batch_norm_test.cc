// autograd::sync_batch_norm in one process, with fake collectives: a world of two ranks whose other
// rank holds a fixed part of the batch. Float64 gradcheck, and parity with batch_norm on the whole
// batch (outputs, input gradient, running statistics). The op over real processes: tests/dist.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/sync_batch_norm.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using normlab::Error;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, double mean = 0, double std = 1) {
  Generator gen(seed);
  return randn(s, gen, mean, std, DType::Float64);
}

// What a rank contributes to the forward's allgather for its part x (N, C, L): its count, then
// each channel's mean, then each channel's M2 = sum (x - mean)^2.
std::vector<double> contribution(const Tensor& x) {
  const int64_t N = x.size(0), C = x.size(1), L = x.numel() / (N * C);
  const std::vector<double> v = x.to_vector();
  std::vector<double> out(1 + 2 * C, 0.0);
  out[0] = static_cast<double>(N * L);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t l = 0; l < L; ++l) s += v[(i * C + c) * L + l];
    const double mean = s / static_cast<double>(N * L);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t l = 0; l < L; ++l) ss += (v[(i * C + c) * L + l] - mean) * (v[(i * C + c) * L + l] - mean);
    out[1 + c] = mean, out[1 + C + c] = ss;
  }
  return out;
}

// Two ranks in this process: rank 0 holds a fixed part (its allgather contribution `other`), the
// caller is rank 1. Rank 0's outputs are not in the caller's loss, so its backward sums are 0 and
// the allreduce leaves the caller's sums as they are.
RankCollectives with_fixed_rank_0(const std::vector<double>& other) {
  return {.rank = 1,
          .size = 2,
          .allgather =
              [other](const double* x, int64_t n) {
                BOOST_REQUIRE_EQUAL(n, static_cast<int64_t>(other.size()));
                std::vector<double> all = other;
                all.insert(all.end(), x, x + n);
                return all;
              },
          .allreduce_sum = [](double*, int64_t) {}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sync_batch_norm_op)

BOOST_AUTO_TEST_CASE(gradcheck_with_a_fixed_second_rank) {
  const RankCollectives ranks = with_fixed_rank_0(contribution(rnd({2, 3, 2}, 30, 2, 1.5)));
  const Tensor x = rnd({3, 3, 2}, 31, -1, 2).requires_grad_(), w = rnd({3}, 32, 1, 0.5).requires_grad_(),
               b = rnd({3}, 33).requires_grad_();
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) {
    return sync_batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], 0.1, 1e-5, ranks);
  }, {x, w, b}));
  const Tensor x2 = rnd({4, 2}, 34).requires_grad_();  // (N, C), no affine
  const RankCollectives ranks2 = with_fixed_rank_0(contribution(rnd({3, 2}, 35, -3, 0.5)));
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) {
    return sync_batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, ranks2);
  }, {x2}));
}

BOOST_AUTO_TEST_CASE(equals_batch_norm_on_the_whole_batch) {
  // The whole batch (5, C, L): rank 0 holds samples 0-1, this rank samples 2-4.
  const int64_t C = 3, L = 2;
  const Tensor whole = rnd({5, C, L}, 40, 4, 2), g = rnd({3, C, L}, 41);
  const Tensor w = rnd({C}, 42, 1, 0.5), b = rnd({C}, 43);
  const RankCollectives ranks = with_fixed_rank_0(contribution(narrow(whole, 0, 2).clone()));
  Tensor rm = zeros({C}, DType::Float64), rv = ones({C}, DType::Float64);
  const Tensor x = narrow(whole, 2, 3).clone().requires_grad_();
  const Tensor y = sync_batch_norm(x, rm, rv, w, b, 0.1, 1e-5, ranks);
  sum(mul(y, g)).backward();

  Tensor ref_rm = zeros({C}, DType::Float64), ref_rv = ones({C}, DType::Float64);
  const Tensor xr = whole.detach().requires_grad_();
  const Tensor yr = batch_norm(xr, ref_rm, ref_rv, w, b, /*training=*/true, 0.1, 1e-5);
  std::vector<double> gr(2 * C * L, 0.0);  // rank 0's outputs are not in the loss
  for (double v : g.to_vector()) gr.push_back(v);
  sum(mul(yr, tensor(gr, {5, C, L}, DType::Float64))).backward();

  normlab::test::expect_elements_close("output", y.to_vector(), narrow(yr, 2, 3).clone().to_vector(), 1e-12, 1e-12);
  normlab::test::expect_elements_close("input gradient", x.grad().to_vector(),
                                       narrow(xr.grad(), 2, 3).clone().to_vector(), 1e-10, 1e-12);
  normlab::test::expect_elements_close("running_mean", rm.to_vector(), ref_rm.to_vector(), 1e-12, 1e-12);
  normlab::test::expect_elements_close("running_var", rv.to_vector(), ref_rv.to_vector(), 1e-12, 1e-12);
}

BOOST_AUTO_TEST_CASE(one_value_per_channel_over_all_ranks_is_pytorchs_error) {
  // Rank 0 holds nothing, this rank one sample: one value per channel in the whole batch.
  const RankCollectives ranks = with_fixed_rank_0(std::vector<double>(1 + 2 * 3, 0.0));
  try {
    sync_batch_norm(zeros({1, 3}, DType::Float64), Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, ranks);
    BOOST_ERROR("a global batch of one was normalized");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()) ==
                   "Expected more than 1 value per channel when training, got input size [1, 3] on rank 1 and 1.0 "
                   "value(s) per channel over all 2 ranks",
               e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
