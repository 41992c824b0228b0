// nn::LSTM: PyTorch parity on tests/fixtures/lstm.safetensors (state_dict loaded by name, output,
// h_n, c_n and the gradients of a fixed loss w.r.t. the input, the initial state and every
// parameter), a float64 gradcheck, names, init, repr, layouts and input errors. nn::LayerNormLSTM:
// parity with the Python cell of scripts/make_fixtures.py (tests/fixtures/ln_lstm.safetensors), a
// float64 gradcheck, names, repr and errors.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/bn_lstm.h"
#include "nn/init.h"
#include "nn/ln_lstm.h"
#include "nn/lstm.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// |got - want| <= atol + rtol |want|, as tests/nn/parity_test.cc: rtol 1e-5 (float64 1e-10) and an
// absolute floor 1e-6 (1e-13) for values near 0 that are sums of O(1) terms (the weight gradients
// add B T products per element).
struct Tol {
  double rtol, atol;
};

class Used {
 public:
  explicit Used(const normlab::test::Fixture& fx) : fx_(fx) {}
  Tensor get(const std::string& n) {
    used_.insert(n);
    return fx_.get(n);
  }
  void check_all_used() const {
    std::string unused;
    for (const auto& [name, t] : fx_.tensors())
      if (!used_.count(name)) unused += name + " ";
    BOOST_TEST(unused.empty(), "tensors of the fixture never compared: " << unused);
  }

 private:
  const normlab::test::Fixture& fx_;
  std::set<std::string> used_;
};

// With metadata <name>.float32_deviation (PyTorch's own float32 error on this value, ln_lstm's
// and bn_lstm's float32 cases), the floor is 1e-6 + k times that deviation: two float32
// computations may each be off by about as much, in opposite directions, and normlab's float32
// kernels are not PyTorch's. k = 4 for the LayerNorm LSTM; k = 32 for the BatchNorm LSTM, whose
// batch statistics over 3 or 4 samples amplify float32 rounding so much that normlab's own error
// moves with the compiler's flags: at most 2.6 deviations in the release build, 28 at -O1 (the
// sanitize preset). A wrong formula is off by far more;
// the float64 cases (rtol 1e-10) are the exact check.
void expect_close(Used& u, const Tensor& got, const std::string& name, Tol tol,
                  const normlab::test::Fixture* fx = nullptr) {
  const Tensor want = u.get(name);
  if (fx && fx->metadata().count(name + ".float32_deviation"))
    tol.atol = std::max(tol.atol, 1e-6 + (fx->name() == "bn_lstm" ? 32 : 4) *
                                             std::stod(fx->meta(name + ".float32_deviation")));
  BOOST_TEST_CONTEXT("comparing with " << name) {
    BOOST_TEST_REQUIRE(got.defined());
    BOOST_TEST_REQUIRE(got.shape() == want.shape());
    BOOST_TEST((got.dtype() == want.dtype()));
    normlab::test::expect_elements_close(name, got.to_vector(), want.to_vector(), tol.rtol, tol.atol);
  }
}

bool flag(const normlab::test::Fixture& fx, const std::string& key) { return fx.meta(key) == "true"; }

Tol tol_for(const std::string& dt) { return dt == "f32" ? Tol{1e-5, 1e-6} : Tol{1e-10, 1e-13}; }

// Loads the fixture's state_dict into m by name (load_state_dict is strict: no name missing or
// unexpected), runs forward_with_state on its input (and initial state), compares output, h_n, c_n,
// then the gradients of <output, dy> + <h_n, dh> + <c_n, dc> w.r.t. the input, h0, c0 and every
// parameter.
template <class M>
void check_parity(const normlab::test::Fixture& fx, Used& u, const std::string& dt, const std::string& c, M& m) {
  const Tol tol = tol_for(dt);
  const std::string p = dt + "." + c + ".";
  NamedTensors state;
  for (const auto& [name, t] : m.state_dict()) state.emplace_back(name, u.get(p + "state." + name));
  m.load_state_dict(state);
  const Tensor x = u.get(p + "input").detach().clone();
  x.requires_grad_();
  Tensor h0, c0;
  if (flag(fx, c + ".initial_state")) {
    h0 = u.get(p + "h0").detach().clone();
    c0 = u.get(p + "c0").detach().clone();
    h0.requires_grad_();
    c0.requires_grad_();
  }
  const LSTMOutput out = m.forward_with_state(x, h0, c0);
  expect_close(u, out.output, p + "output", tol, &fx);
  expect_close(u, out.h_n, p + "h_n", tol, &fx);
  expect_close(u, out.c_n, p + "c_n", tol, &fx);
  const Tensor loss = sum(out.output * u.get(p + "grad_output")) + sum(out.h_n * u.get(p + "grad_h_n")) +
                      sum(out.c_n * u.get(p + "grad_c_n"));
  loss.backward();
  expect_close(u, x.grad(), p + "grad_input", tol, &fx);
  if (h0.defined()) {
    expect_close(u, h0.grad(), p + "grad_h0", tol, &fx);
    expect_close(u, c0.grad(), p + "grad_c0", tol, &fx);
  }
  for (const auto& [name, t] : m.named_parameters()) expect_close(u, t.grad(), p + "grad." + name, tol, &fx);
}

void lstm_case(const normlab::test::Fixture& fx, Used& u, const std::string& dt, const std::string& c) {
  LSTMOptions o;
  o.num_layers = std::stoll(fx.meta(c + ".num_layers"));
  o.bias = flag(fx, c + ".bias");
  o.batch_first = flag(fx, c + ".batch_first");
  o.dtype = dt == "f32" ? DType::Float32 : DType::Float64;
  Generator gen(1);
  LSTM m(std::stoll(fx.meta(c + ".input_size")), std::stoll(fx.meta(c + ".hidden_size")), gen, o);
  check_parity(fx, u, dt, c, m);
}

void ln_lstm_case(const normlab::test::Fixture& fx, Used& u, const std::string& dt, const std::string& c) {
  LayerNormLSTMOptions o;
  o.num_layers = std::stoll(fx.meta(c + ".num_layers"));
  o.batch_first = flag(fx, c + ".batch_first");
  o.dtype = dt == "f32" ? DType::Float32 : DType::Float64;
  Generator gen(1);
  LayerNormLSTM m(std::stoll(fx.meta(c + ".input_size")), std::stoll(fx.meta(c + ".hidden_size")), gen, o);
  check_parity(fx, u, dt, c, m);
}

void bn_lstm_case(const normlab::test::Fixture& fx, Used& u, const std::string& dt, const std::string& c) {
  const Tol tol = tol_for(dt);
  const std::string p = dt + "." + c + ".";
  BatchNormLSTMOptions o;
  o.num_layers = std::stoll(fx.meta(c + ".num_layers"));
  o.batch_first = flag(fx, c + ".batch_first");
  o.max_steps = std::stoll(fx.meta(c + ".max_steps"));
  o.shared_statistics = flag(fx, c + ".shared_statistics");
  o.dtype = dt == "f32" ? DType::Float32 : DType::Float64;
  Generator gen(1);
  BatchNormLSTM m(std::stoll(fx.meta(c + ".input_size")), std::stoll(fx.meta(c + ".hidden_size")), gen, o);
  NamedTensors state;
  for (const auto& [name, t] : m.state_dict()) state.emplace_back(name, u.get(p + "state." + name));
  m.load_state_dict(state);
  // One training step.
  const Tensor x = u.get(p + "train_input").detach().clone();
  x.requires_grad_();
  const LSTMOutput out = m.forward_with_state(x);
  expect_close(u, out.output, p + "output", tol, &fx);
  expect_close(u, out.h_n, p + "h_n", tol, &fx);
  expect_close(u, out.c_n, p + "c_n", tol, &fx);
  const Tensor loss = sum(out.output * u.get(p + "grad_output")) + sum(out.h_n * u.get(p + "grad_h_n")) +
                      sum(out.c_n * u.get(p + "grad_c_n"));
  loss.backward();
  expect_close(u, x.grad(), p + "grad_input", tol, &fx);
  for (const auto& [name, t] : m.named_parameters()) expect_close(u, t.grad(), p + "grad." + name, tol, &fx);
  for (const auto& [name, t] : m.named_buffers()) expect_close(u, t, p + "after." + name, tol, &fx);
  // Eval on a longer sequence.
  m.eval();
  NoGradGuard no_grad;
  expect_close(u, m(u.get(p + "eval_input")), p + "eval_output", tol, &fx);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lstm_module)

BOOST_AUTO_TEST_CASE(pytorch_parity) {
  const normlab::test::Fixture fx("lstm");
  Used u(fx);
  for (const std::string dt : {"f32", "f64"})
    for (const std::string c : {"two_layers", "one_layer_nobias"})
      BOOST_TEST_CONTEXT(dt << " " << c) { lstm_case(fx, u, dt, c); }
  u.check_all_used();
}

BOOST_AUTO_TEST_CASE(layernorm_lstm_parity) {
  const normlab::test::Fixture fx("ln_lstm");
  Used u(fx);
  for (const std::string dt : {"f32", "f64"})
    for (const std::string c : {"two_layers", "one_layer"})
      BOOST_TEST_CONTEXT(dt << " " << c) { ln_lstm_case(fx, u, dt, c); }
  u.check_all_used();
}

BOOST_AUTO_TEST_CASE(batchnorm_lstm_parity) {
  const normlab::test::Fixture fx("bn_lstm");
  Used u(fx);
  for (const std::string dt : {"f32", "f64"})
    for (const std::string c : {"per_step", "capped", "shared"})
      BOOST_TEST_CONTEXT(dt << " " << c) { bn_lstm_case(fx, u, dt, c); }
  u.check_all_used();
}

// Training mode: the float64 gradcheck through batch statistics (each call updates the running
// statistics, which training mode never reads). Eval: the slots steps read, and errors.
BOOST_AUTO_TEST_CASE(batchnorm_lstm_gradcheck_slots_repr) {
  Generator gen(3);
  BatchNormLSTMOptions o;
  o.num_layers = 2;
  o.batch_first = true;
  o.max_steps = 2;
  o.dtype = DType::Float64;
  BatchNormLSTM m(3, 2, gen, o);
  In inputs = {random_input({3, 3, 3}, 1), random_input({2, 3, 2}, 2), random_input({2, 3, 2}, 3)};
  for (const Tensor& p : m.parameters()) inputs.push_back(p);
  expect_gradcheck("x, h0, c0 and every parameter", [&m](const In& v) {
    const LSTMOutput out = m.forward_with_state(v[0], v[1], v[2]);
    return cat({reshape(out.output, {-1}), reshape(out.h_n, {-1}), reshape(out.c_n, {-1})}, 0);
  }, inputs);
  BOOST_TEST(m.repr() == "BatchNormLSTM(3, 2, num_layers=2, batch_first=True, max_steps=2)");
  o.shared_statistics = true;
  o.batch_first = false;
  BatchNormLSTM shared(3, 2, gen, o);
  BOOST_TEST(shared.repr() == "BatchNormLSTM(3, 2, num_layers=2, max_steps=2, shared_statistics=True)");
  BOOST_TEST(shared.state_dict().size() == m.state_dict().size());
  // Every BN's buffers have one slot when shared, max_steps otherwise.
  for (const auto& [name, t] : shared.named_buffers())
    if (name != "trained_steps") BOOST_TEST(t.shape()[0] == 1, name);
  for (const auto& [name, t] : m.named_buffers())
    if (name != "trained_steps") BOOST_TEST(t.shape()[0] == 2, name);
  // trained_steps: the longest training sequence, capped at the slots.
  BOOST_TEST(m.state_dict()[6].first == "trained_steps");
  m.forward(random_input({3, 5, 3}, 4).detach());
  BOOST_TEST(m.state_dict()[6].second.item() == 2.0);
  expect_error([&] { m(zeros({3, 4, 2}, DType::Float64)); }, {"BatchNormLSTM", "(B, T, 3)", "[3, 4, 2]"});
  expect_error([&] { BatchNormLSTMOptions bad; bad.max_steps = 0; BatchNormLSTM(3, 2, gen, bad); },
               {"BatchNormLSTM", "max_steps=0"});
  // Training needs two or more samples per step (batch statistics), as PyTorch's BatchNorm.
  expect_error([&] { m(zeros({1, 2, 3}, DType::Float64)); }, {"more than 1 value per channel"});
}

BOOST_AUTO_TEST_CASE(layernorm_lstm_gradcheck_names_repr) {
  Generator gen(3);
  LayerNormLSTMOptions o;
  o.num_layers = 2;
  o.batch_first = true;
  o.dtype = DType::Float64;
  LayerNormLSTM m(3, 2, gen, o);
  In inputs = {random_input({2, 3, 3}, 1), random_input({2, 2, 2}, 2), random_input({2, 2, 2}, 3)};
  for (const Tensor& p : m.parameters()) inputs.push_back(p);
  expect_gradcheck("x, h0, c0 and every parameter", [&m](const In& v) {
    const LSTMOutput out = m.forward_with_state(v[0], v[1], v[2]);
    return cat({reshape(out.output, {-1}), reshape(out.h_n, {-1}), reshape(out.c_n, {-1})}, 0);
  }, inputs);
  std::vector<std::string> names;
  for (const auto& [name, t] : m.state_dict()) names.push_back(name);
  const std::vector<std::string> want = {"weight_ih_l0", "weight_hh_l0", "bias_l0", "weight_ih_l1", "weight_hh_l1",
                                         "bias_l1", "ln_ih_l0.weight", "ln_hh_l0.weight", "ln_c_l0.weight",
                                         "ln_c_l0.bias", "ln_ih_l1.weight", "ln_hh_l1.weight", "ln_c_l1.weight",
                                         "ln_c_l1.bias"};
  BOOST_TEST(names == want, boost::test_tools::per_element());
  BOOST_TEST(m.repr() == "LayerNormLSTM(3, 2, num_layers=2, batch_first=True)");
  expect_error([&] { m(zeros({2, 3, 4}, DType::Float64)); }, {"LayerNormLSTM", "(B, T, 3)", "[2, 3, 4]"});
  expect_error([&] { m.forward_with_state(zeros({2, 3, 3}, DType::Float64), zeros({2, 1, 2}, DType::Float64)); },
               {"h0", "[2, 2, 2]", "[2, 1, 2]"});
}

BOOST_AUTO_TEST_CASE(gradcheck_float64) {
  Generator gen(3);
  LSTMOptions o;
  o.num_layers = 2;
  o.batch_first = true;
  o.dtype = DType::Float64;
  LSTM lstm(3, 2, gen, o);
  // gradcheck perturbs its inputs in place: the module's own parameters are inputs, so the function
  // reads them through the module. Output, h_n and c_n all enter the checked function.
  auto fn = [&lstm](const In& v) {
    const LSTMOutput out = lstm.forward_with_state(v[0], v[1], v[2]);
    return cat({reshape(out.output, {-1}), reshape(out.h_n, {-1}), reshape(out.c_n, {-1})}, 0);
  };
  In inputs = {random_input({2, 3, 3}, 1), random_input({2, 2, 2}, 2), random_input({2, 2, 2}, 3)};
  for (const Tensor& p : lstm.parameters()) inputs.push_back(p);
  expect_gradcheck("x, h0, c0 and every parameter", fn, inputs);
  // Without an initial state (the first step skips the hidden GEMM), time-major, no bias.
  LSTMOptions o2;
  o2.bias = false;
  o2.dtype = DType::Float64;
  LSTM lstm2(2, 3, gen, o2);
  In inputs2 = {random_input({4, 2, 2}, 4)};
  for (const Tensor& p : lstm2.parameters()) inputs2.push_back(p);
  expect_gradcheck("zero initial state, no bias", [&lstm2](const In& v) { return lstm2(v[0]); }, inputs2);
}

// One time step and no initial state: the hidden weights do not change the output, but PyTorch
// still gives them a gradient, zeros (torch.nn.LSTM(2, 3)(torch.randn(1, 4, 2))[0].sum().backward()
// leaves weight_hh_l0.grad a (12, 3) tensor of zeros), so an optimizer steps them: AdamW decays them.
BOOST_AUTO_TEST_CASE(one_time_step_gives_the_hidden_weights_zero_gradients) {
  Generator gen(5);
  LSTMOptions o;
  o.num_layers = 2;
  LSTM lstm(2, 3, gen, o);
  LayerNormLSTMOptions lo;
  LayerNormLSTM ln(2, 3, gen, lo);
  for (Module* m : std::vector<Module*>{&lstm, &ln}) {
    const Tensor x = randn({1, 4, 2}, gen);  // (T = 1, B, I)
    sum((*m)(x)).backward();
    for (const auto& [name, p] : m->named_parameters()) {
      BOOST_TEST_CONTEXT(m->repr() << " " << name) {
        BOOST_REQUIRE(p.grad().defined());
        if (name.starts_with("weight_hh") || name.starts_with("ln_hh")) {
          const float* g = p.grad().data<float>();
          BOOST_TEST(std::all_of(g, g + p.numel(), [](float v) { return v == 0.0f; }));
        }
      }
    }
  }
}

// PyTorch's parameter names and shapes in its order, drawn from U(-1/sqrt(H), 1/sqrt(H)) in that
// order (the first values of weight_ih_l0 are the generator's first draws).
BOOST_AUTO_TEST_CASE(names_shapes_init) {
  Generator gen(7);
  LSTMOptions o;
  o.num_layers = 2;
  LSTM lstm(5, 4, gen, o);
  const std::vector<std::pair<std::string, Shape>> want = {
      {"weight_ih_l0", {16, 5}}, {"weight_hh_l0", {16, 4}}, {"bias_ih_l0", {16}}, {"bias_hh_l0", {16}},
      {"weight_ih_l1", {16, 4}}, {"weight_hh_l1", {16, 4}}, {"bias_ih_l1", {16}}, {"bias_hh_l1", {16}}};
  const NamedTensors sd = lstm.state_dict();
  BOOST_TEST_REQUIRE(sd.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    BOOST_TEST(sd[i].first == want[i].first);
    BOOST_TEST(sd[i].second.shape() == want[i].second);
    BOOST_TEST(sd[i].second.requires_grad());
    for (double v : sd[i].second.to_vector()) BOOST_TEST((v >= -0.5 && v <= 0.5));
  }
  BOOST_TEST(lstm.weight_ih(1).is_same(sd[4].second));
  Generator same(7);
  const Tensor first = normlab::nn::init::uniform_(empty({16, 5}), -0.5, 0.5, same);
  BOOST_TEST(first.to_vector() == lstm.weight_ih(0).to_vector());
  LSTMOptions nb;
  nb.bias = false;
  LSTM no_bias(3, 2, gen, nb);
  BOOST_TEST(no_bias.state_dict().size() == 2u);
  BOOST_TEST(!no_bias.bias_ih(0).defined());
}

BOOST_AUTO_TEST_CASE(repr_as_pytorch) {
  Generator gen(1);
  LSTMOptions bf;
  bf.batch_first = true;
  BOOST_TEST(LSTM(28, 128, gen, bf).repr() == "LSTM(28, 128, batch_first=True)");
  BOOST_TEST(LSTM(5, 4, gen).repr() == "LSTM(5, 4)");
  LSTMOptions all;
  all.num_layers = 2;
  all.bias = false;
  all.batch_first = true;
  BOOST_TEST(LSTM(5, 4, gen, all).repr() == "LSTM(5, 4, num_layers=2, bias=False, batch_first=True)");
}

// batch_first is a transpose of the layout only; forward is forward_with_state's output; zero
// initial states are the default; h_n and c_n are the last step's h and c of each layer.
BOOST_AUTO_TEST_CASE(layouts_and_states_agree) {
  Generator gen(5);
  LSTMOptions o;
  o.num_layers = 2;
  o.dtype = DType::Float64;
  LSTM tm(3, 4, gen, o);
  o.batch_first = true;
  LSTM bf(3, 4, gen, o);
  bf.load_state_dict(tm.state_dict());
  const Tensor x = random_input({5, 2, 3}, 9).detach();  // (T, B, I)
  const LSTMOutput a = tm.forward_with_state(x), b = bf.forward_with_state(transpose(x, 0, 1));
  BOOST_TEST(transpose(b.output, 0, 1).to_vector() == a.output.to_vector());
  BOOST_TEST(b.h_n.to_vector() == a.h_n.to_vector());
  BOOST_TEST(tm(x).to_vector() == a.output.to_vector());
  const Tensor z = zeros({2, 2, 4}, DType::Float64);
  const LSTMOutput c = tm.forward_with_state(x, z, z);
  BOOST_TEST(c.output.to_vector() == a.output.to_vector());
  BOOST_TEST(c.c_n.to_vector() == a.c_n.to_vector());
  BOOST_TEST(select(a.h_n, 0, 1).to_vector() == select(a.output, 0, 4).to_vector());
  // Running the steps one at a time, carrying the state, gives the same sequence.
  Tensor h = z, cc = z;
  for (int64_t t = 0; t < 5; ++t) {
    const LSTMOutput s = tm.forward_with_state(narrow(x, t, 1), h, cc);
    BOOST_TEST(s.output.to_vector() == narrow(a.output, t, 1).to_vector());
    h = s.h_n;
    cc = s.c_n;
  }
}

BOOST_AUTO_TEST_CASE(bad_input) {
  Generator gen(1);
  LSTMOptions o;
  o.batch_first = true;
  o.num_layers = 2;
  LSTM lstm(5, 4, gen, o);
  expect_error([&] { lstm(zeros({3, 6})); }, {"LSTM(5, 4, num_layers=2, batch_first=True)", "(B, T, 5)", "[3, 6]"});
  expect_error([&] { lstm(zeros({3, 6, 4})); }, {"(B, T, 5)", "[3, 6, 4]"});
  expect_error([&] { lstm(zeros({3, 6, 5}, DType::Float64)); }, {"float64", "float32"});
  expect_error([&] { lstm(zeros({3, 0, 5})); }, {"at least one step", "[3, 0, 5]"});
  expect_error([&] { lstm.forward_with_state(zeros({3, 6, 5}), zeros({1, 3, 4})); }, {"h0", "[2, 3, 4]", "[1, 3, 4]"});
  expect_error([&] { lstm.forward_with_state(zeros({3, 6, 5}), Tensor(), zeros({2, 2, 4})); },
               {"c0", "[2, 3, 4]", "[2, 2, 4]"});
  expect_error([&] { LSTM(0, 4, gen); }, {"LSTM", "input_size=0"});
  LSTM seq(5, 4, gen);
  expect_error([&] { seq(zeros({6, 3, 4})); }, {"(T, B, 5)", "[6, 3, 4]"});
}

BOOST_AUTO_TEST_SUITE_END()
