// gradgradcheck of every module with a differentiable backward, in float64, with respect to the
// module's input (the parameters' second derivatives are checked op by op in
// tests/autograd/gradgradcheck_ops_test.cc): Linear, Conv2d, the pooling layers, Dropout, BatchNorm
// (1d and 2d, training and eval), SyncBatchNorm (one rank), LayerNorm, GroupNorm, InstanceNorm2d,
// RMSNorm, the LSTMs (plain, LayerNorm, recurrent BatchNorm), causal self-attention and a
// transformer block with each of its norms. Odd sizes, so SIMD tails are exercised.
#include <boost/test/unit_test.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/nn.h"
#include "nn/syncbatchnorm.h"
#include "tests/support/tensors.h"

using namespace normlab;
using autograd::DType;
using autograd::Tensor;
using normlab::test::expect_gradgradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// gradgradcheck of x -> m(x) (times x where m is linear in x, so its second derivative is not 0).
void check_module(const std::string& name, nn::Module& m, const Tensor& x, bool times_x = false) {
  m.to(DType::Float64);
  expect_gradgradcheck(name, [&m, times_x](const In& in) {
    const Tensor y = m(in[0]);
    return times_x ? autograd::mul(y, y) : y;
  }, {x});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gradgradcheck_modules)

BOOST_AUTO_TEST_CASE(layers_and_normalizations) {
  autograd::Generator gen(3);
  nn::Linear linear(5, 3, gen);
  check_module("Linear", linear, random_input({4, 5}, 1), true);
  nn::Conv2d conv(2, 3, 3, gen, {.stride = 1, .padding = 1});
  check_module("Conv2d 3x3 pad 1", conv, random_input({2, 2, 5, 4}, 2), true);
  nn::MaxPool2d maxpool(2);
  check_module("MaxPool2d", maxpool, normlab::test::distinct_input({1, 2, 4, 5}, 3), true);
  nn::AvgPool2d avgpool(2);
  check_module("AvgPool2d", avgpool, random_input({1, 2, 4, 5}, 4), true);
  nn::Dropout dropout(0.0);
  check_module("Dropout (p = 0)", dropout, random_input({3, 5}, 5), true);
  nn::BatchNorm1d bn1(5, 1e-5, 0.1, true, true, DType::Float64);
  check_module("BatchNorm1d training", bn1, random_input({6, 5}, 6));
  nn::BatchNorm2d bn2(3, 1e-5, 0.1, true, true, DType::Float64);
  check_module("BatchNorm2d training", bn2, random_input({2, 3, 3, 5}, 7));
  bn2.eval();
  check_module("BatchNorm2d eval (running statistics)", bn2, random_input({2, 3, 3, 5}, 8), true);
  nn::SyncBatchNorm sync(3, 1e-5, 0.1, true, true, DType::Float64);
  check_module("SyncBatchNorm (one rank)", sync, random_input({4, 3, 5}, 9));
  nn::LayerNorm ln({7}, 1e-5, true, true, DType::Float64);
  check_module("LayerNorm", ln, random_input({3, 7}, 10));
  nn::GroupNorm gn(2, 4, 1e-5, true);
  check_module("GroupNorm", gn, random_input({2, 4, 3}, 11));
  nn::InstanceNorm2d in(3, 1e-5, 0.1, true, false, DType::Float64);
  check_module("InstanceNorm2d", in, random_input({2, 3, 2, 3}, 12));
  nn::RMSNorm rms({7}, std::nullopt, true, DType::Float64);
  check_module("RMSNorm", rms, random_input({3, 7}, 13));
}

BOOST_AUTO_TEST_CASE(recurrent_and_attention_modules) {
  autograd::Generator gen(5);
  nn::LSTM lstm(3, 4, gen, {.dtype = DType::Float64});
  check_module("LSTM", lstm, random_input({3, 2, 3}, 20));
  nn::LayerNormLSTM ln_lstm(3, 4, gen, {.dtype = DType::Float64});
  check_module("LayerNormLSTM", ln_lstm, random_input({3, 2, 3}, 21));
  nn::BatchNormLSTM bn_lstm(3, 4, gen, {.gamma_init = 0.5, .dtype = DType::Float64});
  check_module("BatchNormLSTM (recurrent BatchNorm)", bn_lstm, random_input({3, 4, 3}, 22));
  nn::CausalSelfAttention attn(6, 2, gen, 1, DType::Float64);
  check_module("CausalSelfAttention", attn, random_input({2, 5, 6}, 23));
  for (auto [norm, label] : {std::pair{nn::BlockNorm::Layer, "LayerNorm"}, std::pair{nn::BlockNorm::RMS, "RMSNorm"},
                             std::pair{nn::BlockNorm::Batch, "BatchNorm"}}) {
    nn::TransformerBlock block(6, 2, norm, nn::NormPosition::Pre, gen, 1, DType::Float64);
    check_module(std::string("TransformerBlock, pre-") + label, block, random_input({2, 3, 6}, 24));
  }
}

BOOST_AUTO_TEST_SUITE_END()
