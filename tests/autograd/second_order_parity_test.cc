// Second derivatives beside PyTorch 1.13 (tests/fixtures/second_order.safetensors): a gradient
// penalty loss + lambda ||d loss / d x||^2 through torch.autograd.grad(create_graph=True) and its
// gradients, and Hessian-vector products of the loss, for an MLP without a norm and with BatchNorm
// (training and eval), LayerNorm and GroupNorm, in float32 and float64; and the same for modules
// (tests/fixtures/second_order_modules.safetensors): a Conv2d-norm-ReLU-MaxPool CNN with each norm
// (none, BatchNorm2d in training and eval, LayerNorm over (C, H, W), GroupNorm, InstanceNorm), an
// MLP with RMSNorm, causal self-attention, and three steps of the plain, LayerNorm and BatchNorm
// LSTM cells.
#include <boost/test/unit_test.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"

using namespace normlab::autograd;
using normlab::test::expect_elements_close;
using normlab::test::Fixture;

namespace {

struct Case {
  Fixture& fx;
  std::string pre, norm;
  Tensor get(const std::string& k) const { return fx.get(pre + "." + k); }
};

// Linear(5, 6) -> norm -> ReLU -> Linear(6, 3) -> cross-entropy, as the fixture's script builds it.
Tensor forward(const Case& c, const std::vector<Tensor>& p, const Tensor& x, const std::vector<int64_t>& t) {
  Tensor h = linear(x, p[0], p[1]);
  if (c.norm == "batch") h = batch_norm(h, Tensor(), Tensor(), p[4], p[5], true);
  if (c.norm == "batch_eval")
    h = batch_norm(h, c.get("running_mean").clone(), c.get("running_var").clone(), p[4], p[5], false);
  if (c.norm == "layer") h = layer_norm(h, {6}, p[4], p[5]);
  if (c.norm == "group") h = group_norm(h, 2, p[4], p[5]);
  return cross_entropy(linear(relu(h), p[2], p[3]), t);
}

void expect_close(const std::string& name, const Tensor& got, const Tensor& want, bool f32) {
  BOOST_REQUIRE_MESSAGE(got.defined(), name << " is undefined");
  BOOST_REQUIRE_EQUAL(got.numel(), want.numel());
  expect_elements_close(name, got.to_vector(), want.to_vector(), f32 ? 1e-4 : 1e-10, f32 ? 1e-5 : 1e-13);
}

// The module cases' losses, as scripts/make_fixtures.py's module_forward builds them. p: the
// parameters by name (and the constants: running statistics, h0, c0).
Tensor module_forward(const std::string& kind, std::map<std::string, Tensor>& p, const Tensor& x,
                      const std::vector<int64_t>& t) {
  if (kind.rfind("cnn.", 0) == 0) {
    const std::string norm = kind.substr(4);
    Conv2dOptions o;
    o.padding = {1, 1};
    Tensor h = conv2d(x, p["conv_w"], p["conv_b"], o);
    if (norm == "batch") h = batch_norm(h, Tensor(), Tensor(), p["norm_weight"], p["norm_bias"], true);
    if (norm == "batch_eval")
      h = batch_norm(h, p["running_mean"].clone(), p["running_var"].clone(), p["norm_weight"], p["norm_bias"], false);
    if (norm == "layer") h = layer_norm(h, {4, 6, 6}, p["norm_weight"], p["norm_bias"]);
    if (norm == "group") h = group_norm(h, 2, p["norm_weight"], p["norm_bias"]);
    if (norm == "instance") h = group_norm(h, 4, p["norm_weight"], p["norm_bias"]);
    Pool2dOptions pool;
    pool.kernel = {2, 2};
    h = flatten(max_pool2d(relu(h), pool), 1);
    return cross_entropy(linear(h, p["fc_w"], p["fc_b"]), t);
  }
  if (kind == "rms") {
    const Tensor h = rms_norm(linear(x, p["w1"], p["b1"]), {6}, p["norm_weight"], 1e-6);
    return cross_entropy(linear(relu(h), p["w2"], p["b2"]), t);
  }
  if (kind == "attention") {
    const Tensor y = causal_self_attention(linear(x, p["w_qkv"], p["b_qkv"]), 2);
    return cross_entropy(reshape(linear(y, p["w_out"]), {-1, 3}), t);
  }
  Tensor h = p["h0"], c = p["c0"];
  for (int64_t s = 0; s < x.size(0); ++s) {
    const Tensor xt = select(x, 0, s);
    if (kind == "lstm") {
      const Tensor st = lstm_cell(add(linear(xt, p["w_ih"], p["b_ih"]), linear(h, p["w_hh"], p["b_hh"])), c);
      h = select(st, 0, 0), c = select(st, 0, 1);
      continue;
    }
    Tensor G;
    if (kind == "ln_lstm")
      G = add(add(layer_norm(linear(xt, p["w_ih"]), {24}, p["ln_ih"]), layer_norm(linear(h, p["w_hh"]), {24}, p["ln_hh"])),
              p["b"]);
    else
      G = add(add(batch_norm(linear(xt, p["w_ih"]), Tensor(), Tensor(), p["bn_ih"], Tensor(), true),
                  batch_norm(linear(h, p["w_hh"]), Tensor(), Tensor(), p["bn_hh"], Tensor(), true)),
              p["b"]);
    const Tensor st = lstm_gates(G, c);
    c = select(st, 0, 1);
    const Tensor y = kind == "ln_lstm" ? layer_norm(c, {6}, p["ln_c_w"], p["ln_c_b"])
                                       : batch_norm(c, Tensor(), Tensor(), p["bn_c_w"], p["bn_c_b"], true);
    h = lstm_output(select(st, 0, 0), y);
  }
  return cross_entropy(linear(h, p["w_out"], p["b_out"]), t);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(second_order_parity)

BOOST_AUTO_TEST_CASE(modules_gradient_penalty_and_hvp_match_pytorch) {
  Fixture fx("second_order_modules");
  const double lambda = std::stod(fx.meta("lambda"));
  const auto names_of = nlohmann::json::parse(fx.meta("params"));
  const std::vector<std::string> kinds = nlohmann::json::parse(fx.meta("cases"));
  BOOST_TEST(kinds.size() == 11u);
  for (const std::string& kind : kinds) {
    std::vector<int64_t> target;
    for (double v : fx.get(kind + ".target").to_vector()) target.push_back(static_cast<int64_t>(v));
    const std::vector<std::string> names = names_of.at(kind);
    for (const char* dt : {"f32", "f64"}) {
      const std::string pre = kind + "." + dt;
      const bool f32 = std::string(dt) == "f32";
      BOOST_TEST_CONTEXT(pre) {
        std::map<std::string, Tensor> p;
        for (const char* k : {"running_mean", "running_var", "h0", "c0"})
          if (fx.has(pre + "." + k)) p[k] = fx.get(pre + "." + k);
        std::vector<Tensor> wrt;
        for (const auto& k : names) wrt.push_back(p[k] = fx.get(pre + "." + k).clone().requires_grad_());
        const Tensor x = fx.get(pre + ".input").clone().requires_grad_();
        Tensor loss = module_forward(kind, p, x, target);
        expect_close(pre + ".loss", loss, fx.get(pre + ".loss"), f32);
        GradOptions g;
        g.create_graph = true;
        const Tensor gx = grad({loss}, {x}, {}, g)[0];
        expect_close(pre + ".grad_input", gx, fx.get(pre + ".grad_input"), f32);
        const Tensor penalty = sum(mul(gx, gx));
        expect_close(pre + ".penalty", penalty, fx.get(pre + ".penalty"), f32);
        std::vector<Tensor> all = wrt;
        all.push_back(x);
        const std::vector<Tensor> pg = grad({add(loss, mul(penalty, lambda))}, all);
        for (size_t i = 0; i < all.size(); ++i) {
          const std::string k = i < names.size() ? names[i] : "input";
          expect_close(pre + ".penalty_grad." + k, pg[i], fx.get(pre + ".penalty_grad." + k), f32);
        }
        loss = module_forward(kind, p, x, target);
        std::vector<Tensor> v;
        for (const auto& k : names) v.push_back(fx.get(pre + ".hvp_v." + k));
        const std::vector<Tensor> hv = HessianOperator(loss, wrt).apply(v);
        for (size_t i = 0; i < names.size(); ++i)
          expect_close(pre + ".hvp." + names[i], hv[i], fx.get(pre + ".hvp." + names[i]), f32);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gradient_penalty_and_hvp_match_pytorch) {
  Fixture fx("second_order");
  std::vector<int64_t> target;
  for (double v : fx.get("target").to_vector()) target.push_back(static_cast<int64_t>(v));
  const double lambda = std::stod(fx.meta("lambda"));
  for (const char* dt : {"f32", "f64"}) {
    for (const char* norm : {"none", "batch", "batch_eval", "layer", "group"}) {
      const Case c{fx, std::string(dt) + "." + norm, norm};
      const bool f32 = std::string(dt) == "f32";
      BOOST_TEST_CONTEXT(c.pre) {
        std::vector<std::string> names{"w1", "b1", "w2", "b2"};
        if (c.norm != "none") names.insert(names.end(), {"norm_weight", "norm_bias"});
        std::vector<Tensor> p;
        for (const auto& k : names) p.push_back(c.get(k).clone().requires_grad_());
        if (p.size() == 4) p.resize(6);
        const Tensor x = c.get("input").clone().requires_grad_();
        // The penalty: d loss / d x with its graph, then every gradient of loss + lambda |gx|^2.
        Tensor loss = forward(c, p, x, target);
        GradOptions g;
        g.create_graph = true;
        const Tensor gx = grad({loss}, {x}, {}, g)[0];
        expect_close(c.pre + ".grad_input", gx, c.get("grad_input"), f32);
        const Tensor penalty = sum(mul(gx, gx));
        expect_close(c.pre + ".penalty", penalty, c.get("penalty"), f32);
        std::vector<Tensor> wrt(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(names.size()));
        wrt.push_back(x);
        const std::vector<Tensor> pg = grad({add(loss, mul(penalty, lambda))}, wrt);
        for (size_t i = 0; i < wrt.size(); ++i) {
          const std::string k = i < names.size() ? names[i] : "input";
          expect_close(c.pre + ".penalty_grad." + k, pg[i], c.get("penalty_grad." + k), f32);
        }
        // H v of the loss with respect to the parameters.
        loss = forward(c, p, x, target);
        std::vector<Tensor> v;
        for (const auto& k : names) v.push_back(c.get("hvp_v." + k));
        const HessianOperator h(loss, std::vector<Tensor>(wrt.begin(), wrt.end() - 1));
        const std::vector<Tensor> hv = h.apply(v);
        for (size_t i = 0; i < names.size(); ++i)
          expect_close(c.pre + ".hvp." + names[i], hv[i], c.get("hvp." + names[i]), f32);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
