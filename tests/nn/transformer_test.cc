// The GPT block and its attention layer: nanoGPT's state_dict names and init, float64 gradchecks
// for every norm and position, causality (and BatchNorm over tokens leaking the future in training
// mode only), PyTorch parity (tests/fixtures/transformer_block.safetensors: a nanoGPT Block written
// in PyTorch 1.13 for every norm and position, its state_dict loaded here by name), and the errors.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/attention.h"
#include "nn/init.h"
#include "nn/transformer.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::test::expect_elements_close;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

const BlockNorm kNorms[] = {BlockNorm::Layer, BlockNorm::RMS, BlockNorm::Batch, BlockNorm::None};
const NormPosition kPositions[] = {NormPosition::Pre, NormPosition::Post};

std::vector<std::string> names(const NamedTensors& t) {
  std::vector<std::string> r;
  for (const auto& e : t) r.push_back(e.first);
  return r;
}

// Parameters redrawn from U(-0.5, 0.5) (norm scales from U(0.5, 1.5)): with nanoGPT's N(0, 0.02)
// the attention is nearly uniform and the sublayers nearly 0, which would hide errors.
void scramble(Module& m, unsigned seed) {
  Generator gen(seed);
  NoGradGuard ng;
  for (const auto& [name, p] : m.named_parameters()) {
    const bool scale = name.find("ln_") != std::string::npos && name.find("weight") != std::string::npos;
    init::uniform_(p, scale ? 0.5 : -0.5, scale ? 1.5 : 0.5, gen);
  }
}

// The sample standard deviation of t's values.
double stddev(const Tensor& t) {
  const auto v = t.to_vector();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(transformer)

BOOST_AUTO_TEST_CASE(state_dict_names_are_nanogpts) {
  Generator gen(1);
  const std::vector<std::string> attn = {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                                         "attn.c_proj.bias"};
  const std::vector<std::string> mlp = {"mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};
  const auto with_norm = [&](const std::vector<std::string>& ln) {
    std::vector<std::string> r;
    for (const char* which : {"ln_1.", "ln_2."}) {
      for (const auto& n : ln) r.push_back(which + n);
      for (const auto& n : which == std::string("ln_1.") ? attn : mlp) r.push_back(n);
    }
    return r;
  };
  const std::vector<std::string> bn = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  BOOST_TEST(names(TransformerBlock(8, 2, BlockNorm::Layer, NormPosition::Pre, gen).state_dict()) ==
                 with_norm({"weight", "bias"}),
             boost::test_tools::per_element());
  BOOST_TEST(names(TransformerBlock(8, 2, BlockNorm::RMS, NormPosition::Pre, gen).state_dict()) ==
                 with_norm({"weight"}),
             boost::test_tools::per_element());
  BOOST_TEST(names(TransformerBlock(8, 2, BlockNorm::Batch, NormPosition::Post, gen).state_dict()) == with_norm(bn),
             boost::test_tools::per_element());
  BOOST_TEST(names(TransformerBlock(8, 2, BlockNorm::None, NormPosition::Post, gen).state_dict()) == with_norm({}),
             boost::test_tools::per_element());
  const TransformerBlock b(8, 2, BlockNorm::Layer, NormPosition::Pre, gen);
  BOOST_TEST(b.str().find("(attn): CausalSelfAttention(\n    (c_attn): Linear(in_features=8, out_features=24") !=
                 std::string::npos,
             b.str());
  BOOST_TEST(b.str().find("(gelu): GELU") != std::string::npos);
}

// Weights N(0, 0.02), the residual projections N(0, 0.02 / sqrt(2 n_layer)), biases 0, norm scales 1.
BOOST_AUTO_TEST_CASE(init_is_nanogpts) {
  Generator gen(7);
  const int64_t n_layer = 8;
  const TransformerBlock b(64, 4, BlockNorm::Layer, NormPosition::Pre, gen, n_layer, DType::Float64);
  const double resid = 0.02 / std::sqrt(2.0 * n_layer);
  for (const auto& [name, p] : b.named_parameters()) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST((p.dtype() == DType::Float64));
      if (name.find("ln_") == 0) {
        const double want = name.find("weight") != std::string::npos ? 1.0 : 0.0;
        for (double x : p.to_vector()) BOOST_TEST(x == want);
      } else if (name.find("bias") != std::string::npos) {
        for (double x : p.to_vector()) BOOST_TEST(x == 0.0);
      } else {
        // At least 4096 values: the sample deviation is within 4% of sigma with overwhelming odds.
        const double want = name.find("c_proj") != std::string::npos ? resid : 0.02;
        BOOST_TEST(std::fabs(stddev(p) / want - 1) < 0.04, "std " << stddev(p) << ", want " << want);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_causal_self_attention_layer) {
  Generator gen(3);
  CausalSelfAttention a(6, 3, gen, 1, DType::Float64);
  scramble(a, 4);
  expect_gradcheck("CausalSelfAttention", [&a](const In& x) { return a(x[0]); }, {random_input({2, 4, 6}, 5)});
}

// d output / d input and d output / d every parameter, for every norm and position.
BOOST_AUTO_TEST_CASE(gradcheck_every_block) {
  for (BlockNorm norm : kNorms)
    for (NormPosition pos : kPositions) {
      Generator gen(11);
      TransformerBlock b(4, 2, norm, pos, gen, 2, DType::Float64);
      scramble(b, 12);
      const std::vector<Tensor> params = b.parameters();
      std::vector<Tensor> inputs = {random_input({2, 3, 4}, 13)};
      inputs.insert(inputs.end(), params.begin(), params.end());
      expect_gradcheck("block norm " + block_norm_name(norm) + " position " + norm_position_name(pos),
                       [&b](const In& x) { return b(x[0]); }, inputs);
    }
}

// The block adds its residuals inside the sublayers' output projections (linear_add, gelu_linear);
// with a forward hook on attn or mlp it runs them one op at a time, so that the hooks see their
// outputs. Both ways give the same bits (float32), outputs and gradients, for every norm and
// position, and the hooks see each call.
BOOST_AUTO_TEST_CASE(fused_residuals_give_the_bits_of_the_ops_one_by_one) {
  for (BlockNorm norm : kNorms)
    for (NormPosition pos : kPositions) {
      Generator gen(21);
      TransformerBlock b(16, 2, norm, pos, gen, 2);
      scramble(b, 22);
      Generator data(23);
      const Tensor x = randn({3, 5, 16}, data), c = randn({3, 5, 16}, data);
      auto run = [&] {
        const Tensor xi = x.detach();
        xi.requires_grad_(true);
        b.zero_grad();
        const Tensor y = b(xi);
        sum(mul(y, c)).backward();
        std::vector<Tensor> out = {y.detach(), xi.grad()};
        for (const Tensor& p : b.parameters()) out.push_back(p.grad());
        return out;
      };
      const std::vector<Tensor> fused = run();
      int calls = 0;
      Module* mlp = nullptr;
      for (const auto& [name, m] : b.children())
        if (name == "mlp") mlp = m.get();
      const int64_t id = mlp->register_forward_hook([&calls](const Module&, const Tensor&, const Tensor&) { ++calls; });
      const std::vector<Tensor> one_by_one = run();
      mlp->remove_forward_hook(id);
      BOOST_TEST_CONTEXT("norm " << block_norm_name(norm) << " position " << norm_position_name(pos)) {
        BOOST_TEST(calls == 1);
        for (size_t i = 0; i < fused.size(); ++i) {
          const std::vector<double> a = fused[i].to_vector(), e = one_by_one[i].to_vector();
          BOOST_TEST_CONTEXT("output " << i) { BOOST_TEST((a == e)); }
        }
      }
    }
}

// Changing the last token changes no earlier position's output, except with BatchNorm over tokens
// in training mode, whose batch statistics include the last token.
BOOST_AUTO_TEST_CASE(batch_norm_over_tokens_leaks_the_future_in_training_only) {
  const int64_t B = 2, T = 5, C = 4;
  const Tensor x = random_input({B, T, C}, 21).detach();
  Tensor x2 = x.clone();
  for (int64_t c = 0; c < C; ++c) x2.set_flat((T - 1) * C + c, 3.0 + c);  // batch 0, last token
  for (BlockNorm norm : kNorms)
    for (NormPosition pos : kPositions)
      for (bool training : {true, false}) {
        BOOST_TEST_CONTEXT("norm " << block_norm_name(norm) << " position " << norm_position_name(pos)
                                   << " training " << training) {
          Generator gen(22);
          TransformerBlock b(C, 2, norm, pos, gen, 1, DType::Float64);
          scramble(b, 23);
          if (!training) {
            // Running statistics of a few batches first, so eval mode normalizes with real numbers.
            for (unsigned s = 0; s < 3; ++s) b(random_input({B, T, C}, 30 + s).detach());
            b.eval();
          }
          NoGradGuard ng;
          const auto y = b(x).to_vector(), y2 = b(x2).to_vector();
          bool earlier_changed = false, last_changed = false;
          for (int64_t bb = 0; bb < B; ++bb)
            for (int64_t t = 0; t < T; ++t)
              for (int64_t c = 0; c < C; ++c) {
                const int64_t i = (bb * T + t) * C + c;
                if (y[i] == y2[i]) continue;
                if (bb == 0 && t == T - 1)
                  last_changed = true;
                else
                  earlier_changed = true;
              }
          BOOST_TEST(last_changed);
          BOOST_TEST(earlier_changed == (norm == BlockNorm::Batch && training));
        }
      }
}

// Every case of the fixture: the block built here, PyTorch's state_dict loaded by name (every name
// must match, both ways), one training-mode forward, and the output, the gradients of
// sum(output * grad_output) w.r.t. the input and every parameter, and BatchNorm's running statistics
// after the step compared with PyTorch's.
BOOST_AUTO_TEST_CASE(pytorch_parity) {
  const normlab::test::Fixture fx("transformer_block");
  const int64_t C = std::stoll(fx.meta("width")), heads = std::stoll(fx.meta("heads"));
  std::string cases = fx.meta("cases") + ",";
  int checked = 0;
  for (size_t at = cases.find(','); at != std::string::npos; cases.erase(0, at + 1), at = cases.find(',')) {
    const std::string name = cases.substr(0, at), norm = name.substr(0, name.find('_')),
                      position = name.substr(name.find('_') + 1);
    for (const std::string dt : {"f32", "f64"}) {
      const std::string p = dt + "." + name + ".";
      BOOST_TEST_CONTEXT(p) {
        // Float32 as parity_test.cc (rtol 1e-5, atol 1e-6); float64 1e-10, 1e-13.
        const double rtol = dt == "f32" ? 1e-5 : 1e-10, atol = dt == "f32" ? 1e-6 : 1e-13;
        Generator gen(1);
        TransformerBlock b(C, heads, parse_block_norm(norm), parse_norm_position(position), gen, 1,
                           dt == "f32" ? DType::Float32 : DType::Float64);
        NamedTensors state;
        size_t grads = 0, after = 0;
        for (const auto& e : fx.tensors()) {
          if (e.first.rfind(p + "state.", 0) == 0) state.push_back({e.first.substr(p.size() + 6), e.second});
          if (e.first.rfind(p + "grad.", 0) == 0) ++grads;
          if (e.first.rfind(p + "after.", 0) == 0) ++after;
        }
        b.load_state_dict(state);
        b.train();
        Tensor x = fx.get(p + "input").clone();
        x.requires_grad_();
        const Tensor y = b(x);
        sum(mul(y, fx.get(p + "grad_output"))).backward();
        expect_elements_close(p + "output", y.to_vector(), fx.get(p + "output").to_vector(), rtol, atol);
        expect_elements_close(p + "grad_input", x.grad().to_vector(), fx.get(p + "grad_input").to_vector(), rtol,
                              atol);
        const NamedTensors params = b.named_parameters(), buffers = b.named_buffers();
        BOOST_TEST(params.size() == grads);
        for (const auto& e : params)
          expect_elements_close(p + "grad." + e.first, e.second.grad().to_vector(),
                                fx.get(p + "grad." + e.first).to_vector(), rtol, atol);
        BOOST_TEST(buffers.size() == after);
        for (const auto& e : buffers)
          expect_elements_close(p + "after." + e.first, e.second.to_vector(),
                                fx.get(p + "after." + e.first).to_vector(), rtol, atol);
        ++checked;
      }
    }
  }
  BOOST_TEST(checked == 16);  // 4 norms x 2 positions x 2 dtypes
}

BOOST_AUTO_TEST_CASE(errors) {
  Generator gen(1);
  expect_error([&] { CausalSelfAttention(10, 4, gen); }, {"CausalSelfAttention", "width=10", "heads=4"});
  expect_error([&] { CausalSelfAttention(8, 0, gen); }, {"CausalSelfAttention", "heads=0"});
  expect_error([&] { TransformerBlock(6, 4, BlockNorm::Layer, NormPosition::Pre, gen); }, {"width=6", "heads=4"});
  CausalSelfAttention a(8, 2, gen);
  expect_error([&] { a(zeros({2, 8})); }, {"CausalSelfAttention", "(B, T, 8)", "[2, 8]"});
  expect_error([&] { a(zeros({2, 3, 6})); }, {"CausalSelfAttention", "(B, T, 8)", "[2, 3, 6]"});
  TransformerBlock b(8, 2, BlockNorm::Batch, NormPosition::Post, gen);
  expect_error([&] { b(zeros({3, 8})); }, {"TransformerBlock", "(B, T, 8)", "[3, 8]"});
  expect_error([&] { parse_block_norm("group"); }, {"group", "layer, rms, batch, none or noisybatch"});
  expect_error([&] { parse_norm_position("middle"); }, {"middle", "pre or post"});
  for (BlockNorm n : kNorms) BOOST_TEST((parse_block_norm(block_norm_name(n)) == n));
  for (NormPosition p : kPositions) BOOST_TEST((parse_norm_position(norm_position_name(p)) == p));
}

BOOST_AUTO_TEST_SUITE_END()
