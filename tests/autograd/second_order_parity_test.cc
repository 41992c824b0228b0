// Second derivatives beside PyTorch 1.13 (tests/fixtures/second_order.safetensors): a gradient
// penalty loss + lambda ||d loss / d x||^2 through torch.autograd.grad(create_graph=True) and its
// gradients, and Hessian-vector products of the loss, for an MLP without a norm and with BatchNorm
// (training and eval), LayerNorm and GroupNorm, in float32 and float64.
#include <boost/test/unit_test.hpp>
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

}  // namespace

BOOST_AUTO_TEST_SUITE(second_order_parity)

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
