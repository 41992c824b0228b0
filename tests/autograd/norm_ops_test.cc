// The differentiable norm ops (autograd/norm.h): float64 gradcheck of every op and mode, values and
// gradients against the same formulas composed from autograd's basic ops, PyTorch's error messages,
// and bitwise run-to-run determinism.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/norm.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using normlab::Error;
using normlab::test::check_tensor;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, double mean = 0, double std = 1, bool grad = true) {
  Generator gen(seed);
  Tensor t = randn(s, gen, mean, std, DType::Float64);
  if (grad) t.requires_grad_();
  return t;
}

// Checks that f throws a normlab::Error whose message contains every piece of `want`.
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

// Sum of out * w for a fixed random w: a scalar whose gradient exercises every output element.
Tensor weighted_sum(const Tensor& out, uint64_t seed) { return sum(mul(out, rnd(out.shape(), seed, 0, 1, false))); }

// Values and gradients of `fused` and `composite` (the same function built from autograd's basic
// ops) agree on inputs `in`.
template <typename F, typename G>
void check_against_composite(F&& fused, G&& composite, const std::vector<Tensor>& in, double tol = 1e-10) {
  std::vector<Tensor> a, b;
  for (const Tensor& t : in) {
    Tensor ta = t.detach().clone(), tb = t.detach().clone();
    if (t.requires_grad()) ta.requires_grad_(), tb.requires_grad_();
    a.push_back(ta), b.push_back(tb);
  }
  Tensor ya = fused(a), yb = composite(b);
  check_tensor(ya, yb.to_vector(), tol, tol);
  weighted_sum(ya, 99).backward();
  weighted_sum(yb, 99).backward();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].requires_grad()) {
      BOOST_TEST_CONTEXT("gradient of input " << i) { check_tensor(a[i].grad(), b[i].grad().to_vector(), tol, tol); }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(norm_ops)

// ---- LayerNorm ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(layer_norm_gradcheck_one_dim_affine) {
  Tensor x = rnd({3, 5}, 1), w = rnd({5}, 2, 1, 0.5), b = rnd({5}, 3);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, in[1], in[2]); }, {x, w, b}));
}

BOOST_AUTO_TEST_CASE(layer_norm_gradcheck_two_dims_affine) {
  Tensor x = rnd({2, 2, 3}, 4, 3, 2), w = rnd({2, 3}, 5, 1, 0.5), b = rnd({2, 3}, 6);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {2, 3}, in[1], in[2]); }, {x, w, b}));
}

BOOST_AUTO_TEST_CASE(layer_norm_gradcheck_no_affine) {
  Tensor x = rnd({4, 6}, 7);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {6}); }, {x}));
  Tensor x2 = rnd({2, 1, 3}, 8);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {1, 3}); }, {x2}));
}

BOOST_AUTO_TEST_CASE(layer_norm_gradcheck_weight_without_bias) {
  Tensor x = rnd({3, 4}, 9), w = rnd({4}, 10, 1, 0.5);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {4}, in[1]); }, {x, w}));
}

BOOST_AUTO_TEST_CASE(layer_norm_matches_composite) {
  auto fused = [](const std::vector<Tensor>& in) { return layer_norm(in[0], {3, 4}, in[1], in[2], 1e-3); };
  auto composite = [](const std::vector<Tensor>& in) {
    Tensor mu = mean(in[0], {-2, -1}, true), v = var(in[0], {-2, -1}, /*unbiased=*/false, true);
    return add(mul(div(sub(in[0], mu), sqrt(add(v, 1e-3))), in[1]), in[2]);
  };
  check_against_composite(fused, composite, {rnd({5, 3, 4}, 11, 2, 3), rnd({3, 4}, 12), rnd({3, 4}, 13)});
}

BOOST_AUTO_TEST_CASE(layer_norm_float32_matches_float64) {
  Tensor x = rnd({8, 37}, 14, 0, 1, false), w = rnd({37}, 15, 0, 1, false), b = rnd({37}, 16, 0, 1, false);
  Tensor y64 = layer_norm(x, {37}, w, b);
  Tensor y32 = layer_norm(x.to(DType::Float32), {37}, w.to(DType::Float32), b.to(DType::Float32));
  BOOST_TEST((y32.dtype() == DType::Float32));
  check_tensor(y32, y64.to_vector(), 1e-5, 1e-5);
}

BOOST_AUTO_TEST_CASE(layer_norm_bad_input) {
  Tensor x = zeros({2, 4});
  check_error([&] { layer_norm(x, {3}); },
              {"Given normalized_shape=[3], expected input with shape [*, 3], but got input of size [2, 4]"});
  check_error([&] { layer_norm(zeros({2, 3, 4}), {2, 4}); }, {"[*, 2, 4]", "[2, 3, 4]"});
  check_error([&] { layer_norm(zeros({4}), {2, 4}); }, {"[*, 2, 4]", "of size [4]"});
  check_error([&] { layer_norm(x, {}); }, {"normalized_shape = []"});
  check_error([&] { layer_norm(x, {4}, ones({3})); },
              {"weight of shape [3] and normalized_shape = [4]"});
  check_error([&] { layer_norm(x, {4}, ones({4}), zeros({2, 2})); }, {"bias of shape [2, 2]"});
  check_error([&] { layer_norm(x, {4}, ones({4}, DType::Float64)); }, {"weight", "float32", "float64"});
  check_error([&] { layer_norm(x, {4}, Tensor(), Tensor(), -1); }, {"eps", "-1.0"});
  check_error([&] { layer_norm(Tensor(), {4}); }, {"undefined"});
}

// ---- BatchNorm ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(batch_norm_training_gradcheck_NC) {
  // The whole-batch Jacobian: every output depends on every input of its channel.
  Tensor x = rnd({4, 3}, 20, 1, 2), w = rnd({3}, 21, 1, 0.5), b = rnd({3}, 22);
  Tensor rm = zeros({3}, DType::Float64), rv = ones({3}, DType::Float64);
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) {
    return batch_norm(in[0], rm, rv, in[1], in[2], /*training=*/true, 0.1, 1e-5);
  }, {x, w, b}));
}

BOOST_AUTO_TEST_CASE(batch_norm_training_gradcheck_NCL) {
  Tensor x = rnd({3, 2, 4}, 23, -1, 2), w = rnd({2}, 24, 1, 0.5), b = rnd({2}, 25);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) {
    return batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-5);
  }, {x, w, b}));
  Tensor x2 = rnd({2, 3, 2}, 26);  // no affine
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) {
    return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5);
  }, {x2}));
}

BOOST_AUTO_TEST_CASE(batch_norm_eval_gradcheck) {
  Tensor x = rnd({4, 3}, 27), w = rnd({3}, 28, 1, 0.5), b = rnd({3}, 29);
  Tensor rm = rnd({3}, 30, 0, 1, false), rv = rnd({3}, 31, 2, 0.5, false);
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) {
    return batch_norm(in[0], rm, rv, in[1], in[2], /*training=*/false, 0.1, 1e-5);
  }, {x, w, b}));
  Tensor x3 = rnd({2, 3, 5}, 32);
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) {
    return batch_norm(in[0], rm, rv, in[1], in[2], false, 0.1, 1e-5);
  }, {x3, w, b}));
}

BOOST_AUTO_TEST_CASE(batch_norm_matches_composite) {
  for (bool three_d : {false, true}) {
    BOOST_TEST_CONTEXT("3-D input " << three_d) {
      const Shape s = three_d ? Shape{4, 3, 5} : Shape{6, 3};
      const Shape cs = three_d ? Shape{3, 1} : Shape{3};  // per-channel shape for broadcasting
      const std::vector<int64_t> dims = three_d ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{0};
      auto fused = [&](const std::vector<Tensor>& in) {
        return batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-4);
      };
      auto composite = [&](const std::vector<Tensor>& in) {
        Tensor mu = mean(in[0], dims, true), v = var(in[0], dims, /*unbiased=*/false, true);
        return add(mul(div(sub(in[0], mu), sqrt(add(v, 1e-4))), reshape(in[1], cs)), reshape(in[2], cs));
      };
      check_against_composite(fused, composite, {rnd(s, 33, 5, 2), rnd({3}, 34), rnd({3}, 35)});
      // eval: running statistics are constants
      Tensor rm = rnd({3}, 36, 0, 1, false), rv = rnd({3}, 37, 2, 0.3, false);
      auto fused_eval = [&](const std::vector<Tensor>& in) {
        return batch_norm(in[0], rm, rv, in[1], in[2], false, 0.1, 1e-4);
      };
      auto composite_eval = [&](const std::vector<Tensor>& in) {
        return add(mul(div(sub(in[0], reshape(rm, cs)), sqrt(add(reshape(rv, cs), 1e-4))), reshape(in[1], cs)),
                   reshape(in[2], cs));
      };
      check_against_composite(fused_eval, composite_eval, {rnd(s, 38), rnd({3}, 39), rnd({3}, 40)});
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_updates_running_stats_in_place) {
  // Channel 0 holds 1, 3 (mean 2, unbiased var 2); channel 1 holds 0, 0 (mean 0, var 0).
  Tensor x = tensor({1, 0, 3, 0}, {2, 2}, DType::Float64);
  Tensor rm = zeros({2}, DType::Float64), rv = ones({2}, DType::Float64);
  Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5);
  check_tensor(rm, {0.1 * 2, 0}, 1e-14, 1e-14);       // 0.9 * 0 + 0.1 * 2
  check_tensor(rv, {0.9 + 0.1 * 2, 0.9}, 1e-14, 1e-14);  // 0.9 * 1 + 0.1 * unbiased var
  // normalized with the biased variance 1: (1 - 2) / sqrt(1 + 1e-5)
  const double r = 1 / std::sqrt(1 + 1e-5);
  check_tensor(y, {-r, 0, r, 0}, 1e-12, 1e-12);
  // eval: the running stats, untouched
  Tensor ye = batch_norm(x, rm, rv, Tensor(), Tensor(), false, 0.1, 1e-5);
  check_tensor(ye, {(1 - 0.2) / std::sqrt(1.1 + 1e-5), 0, (3 - 0.2) / std::sqrt(1.1 + 1e-5), 0}, 1e-12, 1e-12);
  check_tensor(rm, {0.2, 0}, 1e-14, 1e-14);
}

BOOST_AUTO_TEST_CASE(batch_norm_bad_input) {
  Tensor rm = zeros({4}), rv = ones({4});
  check_error([&] { batch_norm(zeros({1, 4}), rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5); },
              {"Expected more than 1 value per channel when training, got input size [1, 4]"});
  check_error([&] { batch_norm(zeros({1, 4, 1}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5); },
              {"Expected more than 1 value per channel when training, got input size [1, 4, 1]"});
  check_error([&] { batch_norm(zeros({2, 3}), rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5); },
              {"running_mean should contain 3 elements not 4", "[2, 3]"});
  check_error([&] { batch_norm(zeros({2, 4}), rm, rv, ones({3}), Tensor(), true, 0.1, 1e-5); },
              {"weight should contain 4 elements not 3"});
  check_error([&] { batch_norm(zeros({2, 4}), rm, rv, Tensor(), zeros({5}), true, 0.1, 1e-5); },
              {"bias should contain 4 elements not 5"});
  check_error([&] { batch_norm(zeros({4}), rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5); },
              {"(N, C)", "got input of size [4]"});
  check_error([&] { batch_norm(zeros({2, 4}), Tensor(), Tensor(), Tensor(), Tensor(), false, 0.1, 1e-5); },
              {"must be defined in evaluation mode"});
  check_error([&] { batch_norm(zeros({2, 4}), rm, Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5); },
              {"both be defined"});
  check_error([&] { batch_norm(zeros({2, 4}), rm, rv, Tensor(), Tensor(), true, 1.5, 1e-5); },
              {"momentum", "[0, 1]", "1.5"});
  check_error([&] { batch_norm(zeros({2, 4}), rm, rv, Tensor(), Tensor(), true, 0.1, -1e-5); }, {"eps", "-1e-05"});
  check_error([&] { batch_norm(zeros({2, 4}), zeros({4}, DType::Float64), ones({4}, DType::Float64), Tensor(),
                               Tensor(), true, 0.1, 1e-5); },
              {"running_mean", "float32", "float64"});
  // A refused batch changed nothing.
  check_tensor(rm, {0, 0, 0, 0}, 0, 0);
  check_tensor(rv, {1, 1, 1, 1}, 0, 0);
}

// ---- GroupNorm ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(group_norm_gradcheck) {
  Tensor x = rnd({2, 4, 3}, 40, 1, 2), w = rnd({4}, 41, 1, 0.5), b = rnd({4}, 42);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 2, in[1], in[2]); }, {x, w, b}));
  Tensor x2 = rnd({3, 6}, 43);  // (N, C): S = 1
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 3); }, {x2}));
  Tensor x3 = rnd({2, 2, 2, 2}, 44), w3 = rnd({2}, 45), b3 = rnd({2}, 46);  // (N, C, H, W)
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return group_norm(in[0], 1, in[1], in[2]); }, {x3, w3, b3}));
}

BOOST_AUTO_TEST_CASE(group_norm_matches_composite) {
  // GroupNorm(2) on (N, 4, 3) = LayerNorm of each (sample, group) block of (2, 3), then per-channel affine.
  auto fused = [](const std::vector<Tensor>& in) { return group_norm(in[0], 2, in[1], in[2]); };
  auto composite = [](const std::vector<Tensor>& in) {
    Tensor g = reshape(in[0], {3, 2, 2, 3});
    Tensor mu = mean(g, {2, 3}, true), v = var(g, {2, 3}, false, true);
    Tensor xh = reshape(div(sub(g, mu), sqrt(add(v, 1e-5))), {3, 4, 3});
    return add(mul(xh, reshape(in[1], {4, 1})), reshape(in[2], {4, 1}));
  };
  check_against_composite(fused, composite, {rnd({3, 4, 3}, 47, -2, 3), rnd({4}, 48), rnd({4}, 49)});
}

BOOST_AUTO_TEST_CASE(group_norm_bad_input) {
  check_error([&] { group_norm(zeros({2, 6, 4}), 4); },
              {"Expected number of channels in input to be divisible by num_groups, but got input of shape "
               "[2, 6, 4] and num_groups=4"});
  check_error([&] { group_norm(zeros({2, 6}), 3, ones({2})); },
              {"weight of shape [2] and input of shape [2, 6]"});
  check_error([&] { group_norm(zeros({2, 6}), 0); }, {"num_groups must be positive, got 0"});
  check_error([&] { group_norm(zeros({6}), 3); }, {"(N, C, *)", "[6]"});
  check_error([&] { group_norm(zeros({2, 6}), 3, Tensor(), zeros({6}, DType::Float64)); }, {"bias", "float64"});
  check_error([&] { group_norm(zeros({2, 6}), 3, Tensor(), Tensor(), -0.5); }, {"eps", "-0.5"});
}

// ---- RMSNorm ------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(rms_norm_gradcheck) {
  Tensor x = rnd({3, 5}, 50, 0.5, 1), w = rnd({5}, 51, 1, 0.5);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], {5}, in[1], 1e-6); }, {x, w}));
  Tensor x2 = rnd({2, 2, 3}, 52);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], {2, 3}); }, {x2}));
}

BOOST_AUTO_TEST_CASE(rms_norm_values) {
  // x = [3, 4]: mean(x^2) = 12.5, y = x / sqrt(12.5 + eps) * w.
  Tensor x = tensor({3, 4}, {1, 2}, DType::Float64), w = tensor({2, 0.5}, DType::Float64);
  check_tensor(rms_norm(x, {2}, w, 0.5), {2 * 3 / std::sqrt(13.0), 0.5 * 4 / std::sqrt(13.0)}, 1e-14, 1e-14);
  // eps = None: the dtype's machine epsilon (float64: 2^-52; float32: 2^-23).
  Tensor tiny = tensor({1e-8, 0}, {1, 2}, DType::Float64);
  const double ms = 0.5e-16;
  check_tensor(rms_norm(tiny, {2}), {1e-8 / std::sqrt(ms + 0x1p-52), 0}, 1e-12, 0);
  Tensor tiny32 = tensor({1e-3, 0}, {1, 2});
  check_tensor(rms_norm(tiny32, {2}), {1e-3 / std::sqrt(0.5e-6 + 0x1p-23), 0}, 1e-5, 0);
  auto composite = [](const std::vector<Tensor>& in) {
    return mul(div(in[0], sqrt(add(mean(mul(in[0], in[0]), {-1}, true), 1e-5))), in[1]);
  };
  auto fused = [](const std::vector<Tensor>& in) { return rms_norm(in[0], {7}, in[1], 1e-5); };
  check_against_composite(fused, composite, {rnd({4, 7}, 53, 1, 2), rnd({7}, 54)});
}

BOOST_AUTO_TEST_CASE(rms_norm_bad_input) {
  check_error([&] { rms_norm(zeros({2, 4}), {3}); },
              {"Given normalized_shape=[3], expected input with shape [*, 3], but got input of size [2, 4]"});
  check_error([&] { rms_norm(zeros({2, 4}), {4}, ones({2})); }, {"weight of shape [2] and normalized_shape = [4]"});
  check_error([&] { rms_norm(zeros({2, 4}), {4}, Tensor(), -1.0); }, {"eps"});
}

// ---- Determinism ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(results_identical_run_to_run) {
  // Forward and backward twice on the same inputs: bit-identical outputs and gradients.
  auto run = [](bool bn) {
    Generator gen(60);
    Tensor x = randn({64, 1000}, gen), w = randn({1000}, gen), b = randn({1000}, gen), g = randn({64, 1000}, gen);
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_();
    Tensor rm = zeros({1000}), rv = ones({1000});
    Tensor y = bn ? batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5) : layer_norm(x, {1000}, w, b);
    y.backward(g);
    return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad(), rm, rv};
  };
  for (bool bn : {false, true}) {
    const auto a = run(bn), b = run(bn);
    for (size_t i = 0; i < a.size(); ++i) {
      BOOST_TEST_CONTEXT((bn ? "batch_norm" : "layer_norm") << " result " << i) {
        BOOST_TEST(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].numel() * 4) == 0);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
