// The Module base: names and order of parameters and buffers, train/eval, zero_grad, state_dict
// round trips and refused loads, to(DType), and printing as PyTorch prints.
#include <boost/test/unit_test.hpp>

#include "nn/activation.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::Error;
using normlab::test::check_tensor;

namespace {

// A stand-in for BatchNorm1d (written elsewhere) with its parameter and buffer names:
// y = x * weight + bias, and a training-mode counter in num_batches_tracked.
class FakeNorm : public Module {
 public:
  explicit FakeNorm(int64_t c) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", scalar(0));
  }
  Tensor forward(const Tensor& x) override {
    if (is_training()) fill_(num_batches_tracked, num_batches_tracked.item() + 1);
    return x * weight + bias;
  }
  std::string repr() const override { return "FakeNorm(" + std::to_string(weight.numel()) + ")"; }
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};

// Registers the same name twice, which the base must refuse.
class TwiceRegistered : public Module {
 public:
  explicit TwiceRegistered(bool buffer) {
    if (buffer) {
      register_buffer("b", zeros({1}));
      register_buffer("b", zeros({1}));
    } else {
      register_parameter("w", zeros({1}));
      register_parameter("w", zeros({1}));
    }
  }
  Tensor forward(const Tensor& x) override { return x; }
  std::string repr() const override { return "TwiceRegistered()"; }
};

// Linear(3, 4), FakeNorm(4), ReLU, Linear(4, 2): PyTorch's reference stack with BatchNorm1d.
std::shared_ptr<Sequential> make_stack(uint64_t seed) {
  Generator gen(seed);
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(3, 4, gen), std::make_shared<FakeNorm>(4), std::make_shared<ReLU>(),
      std::make_shared<Linear>(4, 2, gen)});
}

std::vector<std::string> names(const NamedTensors& ts) {
  std::vector<std::string> out;
  for (auto& [n, t] : ts) out.push_back(n);
  return out;
}

// Every tensor's values, by name (a deep snapshot).
std::vector<std::vector<double>> values(const NamedTensors& ts) {
  std::vector<std::vector<double>> out;
  for (auto& [n, t] : ts) out.push_back(t.to_vector());
  return out;
}

// A deep copy of a state with every value shifted by `delta` (a valid state that differs).
NamedTensors shifted_copy(const NamedTensors& state, double delta) {
  NamedTensors out;
  for (auto& [n, t] : state) out.emplace_back(n, add(t.detach(), delta));
  return out;
}

bool message_has(const Error& e, const std::vector<std::string>& parts) {
  const std::string m = e.what();
  for (const auto& p : parts)
    if (m.find(p) == std::string::npos) {
      BOOST_TEST_MESSAGE("message \"" << m << "\" lacks \"" << p << "\"");
      return false;
    }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(module)

BOOST_AUTO_TEST_CASE(state_dict_names_are_pytorchs) {
  // PyTorch's nn.Sequential(Linear, BatchNorm1d, ReLU, Linear).
  auto seq = make_stack(1);
  const std::vector<std::string> want = {"0.weight",          "0.bias",         "1.weight",
                                         "1.bias",            "1.running_mean", "1.running_var",
                                         "1.num_batches_tracked", "3.weight",   "3.bias"};
  BOOST_TEST(names(seq->state_dict()) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(named_parameters_and_buffers_in_registration_order) {
  auto seq = make_stack(1);
  const std::vector<std::string> params = {"0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"};
  const std::vector<std::string> buffers = {"1.running_mean", "1.running_var", "1.num_batches_tracked"};
  BOOST_TEST(names(seq->named_parameters()) == params, boost::test_tools::per_element());
  BOOST_TEST(names(seq->named_buffers()) == buffers, boost::test_tools::per_element());
  // The entries are the layers' own tensors, not copies, and parameters require grad.
  auto fc0 = seq->at<Linear>(0);
  BOOST_TEST(seq->named_parameters()[0].second.is_same(fc0->weight()));
  BOOST_TEST(seq->state_dict()[1].second.is_same(fc0->bias()));
  BOOST_TEST(seq->parameters().size() == 6u);
  for (const Tensor& p : seq->parameters()) BOOST_TEST(p.requires_grad());
  for (auto& [n, b] : seq->named_buffers()) BOOST_TEST(!b.requires_grad());
}

BOOST_AUTO_TEST_CASE(num_parameters_counts_elements) {
  // (3*4 + 4) + (4 + 4) + (4*2 + 2) = 16 + 8 + 10 (buffers are not parameters).
  BOOST_TEST(make_stack(1)->num_parameters() == 34);
  Generator gen(0);
  BOOST_TEST(Linear(5, 7, gen, /*bias=*/false).num_parameters() == 35);
  BOOST_TEST(ReLU().num_parameters() == 0);
}

BOOST_AUTO_TEST_CASE(shared_module_parameters_are_listed_once) {
  // PyTorch: named_parameters() drops repeats (so an optimizer steps them once); state_dict keeps both names.
  Generator gen(0);
  auto fc = std::make_shared<Linear>(2, 2, gen);
  Sequential seq({fc, std::make_shared<ReLU>(), fc});
  BOOST_TEST(names(seq.named_parameters()) == (std::vector<std::string>{"0.weight", "0.bias"}),
             boost::test_tools::per_element());
  BOOST_TEST(seq.num_parameters() == 6);
  BOOST_TEST(names(seq.state_dict()) == (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(registering_a_name_twice_is_an_error) {
  BOOST_CHECK_EXCEPTION(TwiceRegistered(false), Error, [](const Error& e) { return message_has(e, {"'w'"}); });
  BOOST_CHECK_EXCEPTION(TwiceRegistered(true), Error, [](const Error& e) { return message_has(e, {"'b'"}); });
}

BOOST_AUTO_TEST_CASE(train_and_eval_reach_every_descendant) {
  Generator gen(0);
  auto inner = std::make_shared<Sequential>(
      std::vector<std::shared_ptr<Module>>{std::make_shared<Dropout>(0.5), std::make_shared<FakeNorm>(2)});
  Sequential outer({std::make_shared<Linear>(2, 2, gen), inner});
  BOOST_TEST(outer.is_training());
  outer.eval();
  BOOST_TEST(!outer.is_training());
  BOOST_TEST(!outer[0]->is_training());
  BOOST_TEST(!inner->is_training());
  BOOST_TEST(!inner->at(0)->is_training());
  BOOST_TEST(!inner->at(1)->is_training());
  // In eval the counter stays put and dropout passes values through.
  Tensor x = ones({3, 2});
  outer(x);
  BOOST_TEST(inner->at<FakeNorm>(1)->num_batches_tracked.item() == 0);
  outer.train();
  BOOST_TEST(inner->at(0)->is_training());
  BOOST_TEST(inner->at(1)->is_training());
  outer(x);
  BOOST_TEST(inner->at<FakeNorm>(1)->num_batches_tracked.item() == 1);
}

BOOST_AUTO_TEST_CASE(zero_grad_clears_every_gradient) {
  auto seq = make_stack(3);
  Generator gen(4);
  sum(seq->forward(randn({5, 3}, gen))).backward();
  for (const Tensor& p : seq->parameters()) BOOST_TEST(p.grad().defined());
  seq->zero_grad();
  for (const Tensor& p : seq->parameters()) BOOST_TEST(!p.grad().defined());
}

BOOST_AUTO_TEST_CASE(state_dict_round_trip_reproduces_the_model) {
  auto a = make_stack(1), b = make_stack(2);
  Generator gen(5);
  Tensor x = randn({6, 3}, gen);
  a->eval(), b->eval();
  const std::vector<double> ya = a->forward(x).to_vector();
  BOOST_TEST(b->forward(x).to_vector() != ya);  // different seeds, different models
  fill_(a->at<FakeNorm>(1)->running_mean, 0.25);  // buffers travel too
  b->load_state_dict(a->state_dict());
  BOOST_TEST((values(b->state_dict()) == values(a->state_dict())));
  BOOST_TEST(b->forward(x).to_vector() == ya);
  // The load copied: b keeps its own storage.
  {
    NoGradGuard g;
    fill_(a->at<Linear>(0)->weight(), 9);
  }
  BOOST_TEST(b->at<Linear>(0)->weight().flat(0) != 9);
  BOOST_TEST(!b->at<Linear>(0)->weight().is_same(a->at<Linear>(0)->weight()));
  // A float64 state loads into a float32 model (converted), as PyTorch's copy_ does.
  NamedTensors doubles;
  for (auto& [n, t] : a->state_dict()) doubles.emplace_back(n, t.detach().to(DType::Float64));
  b->load_state_dict(doubles);
  BOOST_TEST((b->at<Linear>(0)->weight().dtype() == DType::Float32));
  BOOST_TEST(b->at<Linear>(0)->weight().flat(0) == 9);
}

BOOST_AUTO_TEST_CASE(load_state_dict_refuses_missing_tensors_and_changes_nothing) {
  auto m = make_stack(1);
  const auto before = values(m->state_dict());
  NamedTensors state = shifted_copy(m->state_dict(), 1.0);
  state.erase(state.begin() + 5);  // 1.running_var
  BOOST_CHECK_EXCEPTION(m->load_state_dict(state), Error,
                        [](const Error& e) { return message_has(e, {"missing", "1.running_var"}); });
  BOOST_TEST((values(m->state_dict()) == before));
}

BOOST_AUTO_TEST_CASE(load_state_dict_refuses_unexpected_tensors_and_changes_nothing) {
  auto m = make_stack(1);
  const auto before = values(m->state_dict());
  NamedTensors state = shifted_copy(m->state_dict(), 1.0);
  state.emplace_back("2.weight", zeros({4, 4}));  // ReLU has no weight
  BOOST_CHECK_EXCEPTION(m->load_state_dict(state), Error,
                        [](const Error& e) { return message_has(e, {"unexpected", "2.weight"}); });
  BOOST_TEST((values(m->state_dict()) == before));
}

BOOST_AUTO_TEST_CASE(load_state_dict_refuses_wrong_shapes_and_changes_nothing) {
  auto m = make_stack(1);
  const auto before = values(m->state_dict());
  NamedTensors state = shifted_copy(m->state_dict(), 1.0);
  state[7].second = zeros({4, 2});  // 3.weight is (2, 4): transposed by mistake
  BOOST_CHECK_EXCEPTION(m->load_state_dict(state), Error,
                        [](const Error& e) { return message_has(e, {"3.weight", "[2, 4]", "[4, 2]"}); });
  BOOST_TEST((values(m->state_dict()) == before));
}

BOOST_AUTO_TEST_CASE(to_float64_converts_in_place_and_keeps_handles) {
  auto m = make_stack(1);
  auto fc = m->at<Linear>(0);
  const Tensor w = fc->weight();  // a handle taken before the conversion (as an optimizer holds)
  const std::vector<double> w32 = w.to_vector();
  Generator gen(2);
  Tensor x = randn({4, 3}, gen);
  sum(m->forward(x)).backward();
  const std::vector<double> g32 = w.grad().to_vector();
  BOOST_TEST(&m->to(DType::Float64) == m.get());
  for (auto& [n, t] : m->state_dict()) BOOST_TEST((t.dtype() == DType::Float64), n);
  BOOST_TEST((w.dtype() == DType::Float64));
  BOOST_TEST(w.is_same(fc->weight()));
  BOOST_TEST(w.requires_grad());
  BOOST_TEST(w.to_vector() == w32);  // float32 -> float64 is exact
  BOOST_TEST((w.grad().dtype() == DType::Float64));
  BOOST_TEST(w.grad().to_vector() == g32);
  // The float64 model computes in float64, and the gradient lands on the converted tensor.
  m->zero_grad();
  Tensor y = m->forward(x.to(DType::Float64));
  BOOST_TEST((y.dtype() == DType::Float64));
  sum(y).backward();
  BOOST_TEST((w.grad().dtype() == DType::Float64));
  // Back to float32.
  m->to(DType::Float32);
  BOOST_TEST((fc->weight().dtype() == DType::Float32));
  BOOST_TEST(fc->weight().to_vector() == w32);
}

BOOST_AUTO_TEST_CASE(str_prints_like_pytorch) {
  // Printed by PyTorch 1.13 for nn.Sequential(nn.Linear(4,3), nn.ReLU(), nn.Sequential(nn.Linear(3,2,
  // bias=False), nn.GELU(approximate='tanh')), nn.Dropout(0.1), nn.Identity(), nn.Tanh(), nn.Sigmoid()).
  const std::string want =
      "Sequential(\n  (0): Linear(in_features=4, out_features=3, bias=True)\n  (1): ReLU()\n  (2): Sequential(\n"
      "    (0): Linear(in_features=3, out_features=2, bias=False)\n    (1): GELU(approximate='tanh')\n  )\n"
      "  (3): Dropout(p=0.1, inplace=False)\n  (4): Identity()\n  (5): Tanh()\n  (6): Sigmoid()\n)";
  Generator gen(0);
  Sequential seq;
  seq.add(std::make_shared<Linear>(4, 3, gen));
  seq.add(std::make_shared<ReLU>());
  seq.add(std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(3, 2, gen, false), std::make_shared<GELU>()}));
  seq.add(std::make_shared<Dropout>(0.1));
  seq.add(std::make_shared<Identity>());
  seq.add(std::make_shared<Tanh>());
  seq.add(std::make_shared<Sigmoid>());
  BOOST_TEST(seq.str() == want);
  BOOST_TEST(Sequential().str() == "Sequential()");
  BOOST_TEST(Linear(4, 2, gen).str() == "Linear(in_features=4, out_features=2, bias=True)");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(forward_hooks_see_every_call_through_a_sequential_until_removed) {
  Generator gen(0);
  auto fc = std::make_shared<Linear>(3, 2, gen);
  auto act = std::make_shared<ReLU>();
  Sequential seq({fc, act});
  std::vector<std::string> seen;
  Tensor fc_out;
  const int64_t a = fc->register_forward_hook([&](const Module& m, const Tensor& in, const Tensor& out) {
    seen.push_back(m.repr());
    BOOST_TEST(in.size(1) == 3);
    fc_out = out;
  });
  const int64_t b = act->register_forward_hook([&](const Module&, const Tensor& in, const Tensor& out) {
    seen.push_back("relu");
    check_tensor(out, relu(in).to_vector());  // the hook gets the module's input and output
  });
  BOOST_TEST(b == 0);  // ids count per module
  const Tensor x = randn({4, 3}, gen);
  const Tensor y = seq(x);
  BOOST_TEST(seen.size() == 2u);
  BOOST_TEST(seen[0] == fc->repr());
  BOOST_TEST(seen[1] == "relu");
  check_tensor(y, relu(fc_out).to_vector());
  fc->remove_forward_hook(a);
  fc->remove_forward_hook(12345);  // unknown: ignored
  seq(x);
  BOOST_TEST(seen.size() == 3u);  // only the ReLU's hook is left
  BOOST_TEST(seen[2] == "relu");
}
