// End to end against PyTorch, in the style of llm.c's test: nn::GPT (vocab 11, block 8, 2 layers,
// 2 heads, width 8) under norms layer, rms, batch, none (pre-norm) and layer post-norm, and
// nn::CharLSTM (Embedding, 2-layer LSTM, Linear), given PyTorch's initial weights, trained 5 steps
// on one fixed batch (3, 8) as nanoGPT trains: cross-entropy, nn::clip_grad_norm_ (1.0; 0.2 for the
// LSTM), AdamW (lr 1e-3, betas (0.9, 0.95), eps 1e-8) with nanoGPT's groups, weight decay 0.1 on
// the parameters of 2 or more dims (Linear and LSTM weights, embeddings) and 0 on the rest (biases,
// norm weights), here two optim::AdamW over the two groups (AdamW updates each parameter on its
// own, so this is PyTorch's one optimizer with two groups). Reference: PyTorch's float64 run
// (tests/fixtures/gpt_steps and char_lstm_steps, made by scripts/make_fixtures.py).
//
// normlab's float32 run must be within 3x the distance of PyTorch's own float32 run from the float64
// one (per tensor), plus 2e-6: normlab's float32 kernels round differently from PyTorch's (and -O1
// builds from -O2 ones), and AdamW's normalized update turns that into absolute differences of about
// 1e-6 over 5 steps of lr 1e-3; the largest seen, in the -O1 sanitizer build, is 1.35e-6 (rms_pre's
// c_attn.weight, where 3x PyTorch's distance is 0.33e-6). That distance is large (up to 3e-3) for the parameters whose gradient
// is 0 in exact arithmetic (the key biases in c_attn: softmax ignores a constant added to a row's
// scores; with BatchNorm the biases added to the residual stream, which every following BatchNorm
// subtracts again): AdamW divides the rounding noise of their gradients by its own size (plus eps)
// and moves them by up to lr in a random direction. So the float32 values of such a tensor (PyTorch's
// own float32 run more than lr / 10 away) are only checked against what any two runs can differ by,
// 2 x steps x lr: by Cauchy-Schwarz |m_hat| / sqrt(v_hat) <= 1.002 for betas (0.9, 0.95) in 5 steps,
// and their weight decay is 0 (a factor 1.1 covers the BatchNorm running means behind such biases).
// The float64 run must match every loss, gradient norm and final parameter and buffer to 1e-9
// relative, 1e-11 absolute plus 1e-7 times that float32 distance (noise of the same origin, smaller
// by the ratio of the unit roundoffs, 2^-29 ~ 2e-9: the tensor with the most such noise, the batch
// case's last mlp.c_proj.bias, is 1.3e-11 off).
#include <boost/test/unit_test.hpp>
#include <functional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/char_lstm.h"
#include "nn/clip_grad.h"
#include "nn/gpt.h"
#include "optim/adam.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"

using namespace normlab;
using autograd::DType;
using autograd::Tensor;

namespace {

std::vector<int64_t> ids_of(const Tensor& t) {
  std::vector<int64_t> r;
  for (double v : t.to_vector()) r.push_back(static_cast<int64_t>(v));
  return r;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Loads the fixture's initial weights into m (every parameter by name), trains it 5 steps on the
// fixture's batch as nanoGPT trains (see the top) and compares every loss, gradient norm and final
// parameter and buffer with case `name` of the fixture. forward(ids, shape) gives the logits (B, T, V).
void check_steps(const test::Fixture& fx, const std::string& name, nn::Module& m, DType dt,
                 const std::function<Tensor(const std::vector<int64_t>&, const autograd::Shape&)>& forward) {
  {
    autograd::NoGradGuard no_grad;
    for (const auto& e : m.named_parameters()) autograd::copy_(e.second, fx.get("init." + e.first).to(dt));
  }
  m.train();
  const Tensor x = fx.get("input"), y = fx.get("target");
  const std::vector<int64_t> ids = ids_of(x), targets = ids_of(y);
  const int64_t B = x.size(0), T = x.size(1), V = std::stoll(fx.meta("vocab_size"));
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : m.parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  optim::AdamWOptions o{.lr = std::stod(fx.meta("lr")), .betas = {0.9, 0.95}, .eps = std::stod(fx.meta("eps")),
                        .weight_decay = std::stod(fx.meta("weight_decay"))};
  BOOST_TEST(fx.meta("betas") == "[0.9, 0.95]");
  optim::AdamW opt_decay(decay, o);
  o.weight_decay = 0;
  optim::AdamW opt_no_decay(no_decay, o);
  const double max_norm = std::stod(fx.meta("max_norm"));
  std::vector<double> losses, norms;
  const int steps = std::stoi(fx.meta("steps"));
  for (int step = 0; step < steps; ++step) {
    const Tensor logits = forward(ids, {B, T});
    Tensor loss = autograd::cross_entropy(autograd::reshape(logits, {B * T, V}), targets);
    losses.push_back(loss.item());
    m.zero_grad();
    loss.backward();
    norms.push_back(nn::clip_grad_norm_(m.parameters(), max_norm));
    opt_decay.step();
    opt_no_decay.step();
  }
  const bool f64 = dt == DType::Float64;
  const double lr = std::stod(fx.meta("lr"));
  const auto atol = [&](const std::string& key) {
    const double dev32 = std::stod(fx.meta(key + ".float32_deviation"));
    if (f64) return 1e-11 + 1e-7 * dev32;
    // Noise-driven (PyTorch's own float32 run off by more than a tenth of a step): see the top.
    return dev32 > 0.1 * lr ? 2 * steps * lr * 1.1 : 3 * dev32 + 2e-6;
  };
  const double rtol = f64 ? 1e-9 : 0;
  for (const std::string what : {"losses", "grad_norms"}) {
    const std::string key = name + "." + what;
    test::expect_elements_close(key, what == "losses" ? losses : norms, fx.get(key).to_vector(), rtol, atol(key));
  }
  // Every final tensor of the fixture is one of ours and the reverse (num_batches_tracked: int64
  // there, left out; here it must count the 5 steps).
  size_t compared = 0, in_fixture = 0;
  const std::string prefix = name + ".final.";
  for (const auto& e : fx.tensors()) in_fixture += e.first.rfind(prefix, 0) == 0;
  for (const auto& e : m.state_dict()) {
    if (ends_with(e.first, "num_batches_tracked")) {
      BOOST_TEST(e.second.item() == steps);
      continue;
    }
    const std::string key = prefix + e.first;
    test::expect_elements_close(key, e.second.to_vector(), fx.get(key).to_vector(), rtol, atol(key));
    ++compared;
  }
  BOOST_TEST(compared == in_fixture);
}

// The GPT of case "<norm>_<position>" in dtype, checked by check_steps.
void check_gpt(const test::Fixture& fx, const std::string& name, DType dt) {
  nn::GPTConfig c;
  c.vocab_size = std::stoll(fx.meta("vocab_size"));
  c.block_size = std::stoll(fx.meta("block_size"));
  c.n_layer = std::stoll(fx.meta("n_layer"));
  c.n_head = std::stoll(fx.meta("n_head"));
  c.width = std::stoll(fx.meta("width"));
  c.norm = nn::parse_block_norm(name.substr(0, name.find('_')));
  c.position = nn::parse_norm_position(name.substr(name.find('_') + 1));
  autograd::Generator gen(0);
  nn::GPT m(c, gen, dt);
  check_steps(fx, name, m, dt, [&m](const std::vector<int64_t>& ids, const autograd::Shape& s) {
    return m.forward(ids, s);
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpt_steps)

BOOST_AUTO_TEST_CASE(five_adamw_steps_match_pytorch_under_every_norm) {
  const test::Fixture fx("gpt_steps");
  std::string cases = fx.meta("cases") + ",";
  int checked = 0;
  for (size_t at = cases.find(','); at != std::string::npos; cases.erase(0, at + 1), at = cases.find(','))
    for (DType dt : {DType::Float64, DType::Float32}) {
      const std::string name = cases.substr(0, at);
      BOOST_TEST_CONTEXT(name << ", " << autograd::dtype_name(dt)) { check_gpt(fx, name, dt); }
      ++checked;
    }
  BOOST_TEST(checked == 10);  // layer, rms, batch, none pre-norm and layer post-norm, two dtypes
}

// The same for nn::CharLSTM (tests/fixtures/char_lstm_steps: PyTorch's Embedding(11, 6) ->
// LSTM(6, 8, num_layers=2, batch_first=True) -> Linear(8, 11) from its default init, clipping at
// 0.2 so that every step clips). Its printed tree is PyTorch's.
BOOST_AUTO_TEST_CASE(five_adamw_steps_of_a_char_lstm_match_pytorch) {
  const test::Fixture fx("char_lstm_steps");
  for (DType dt : {DType::Float64, DType::Float32}) {
    BOOST_TEST_CONTEXT(autograd::dtype_name(dt)) {
      nn::CharLSTMConfig c;
      c.vocab_size = std::stoll(fx.meta("vocab_size"));
      c.embed_dim = std::stoll(fx.meta("embed_dim"));
      c.hidden_size = std::stoll(fx.meta("hidden_size"));
      c.num_layers = std::stoll(fx.meta("num_layers"));
      autograd::Generator gen(0);
      nn::CharLSTM m(c, gen, dt);
      BOOST_TEST(m.str() == fx.meta("char_lstm.module"));
      check_steps(fx, "char_lstm", m, dt, [&m](const std::vector<int64_t>& ids, const autograd::Shape& s) {
        return m.forward(ids, s);
      });
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
