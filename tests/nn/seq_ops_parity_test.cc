// PyTorch parity of the sequence-model ops (tests/fixtures/seq_ops.safetensors, made by
// scripts/make_fixtures.py): nn::Embedding's output and weight gradient with repeated ids, matmul
// with broadcast batch dims (output and both gradients), and clip_grad_norm_ (norm 2 and inf: the
// total norm and the clipped gradients); every tensor of the fixture checked to have been used.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "nn/nn.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"

using namespace normlab::autograd;
using namespace normlab::nn;

namespace {

// The tolerances of tests/nn/parity_test.cc: float32 rtol 1e-5 with a floor of 1e-6, float64 rtol
// 1e-10 with a floor of 1e-13 (sums of a few products; PyTorch may add them in another order).
struct Tol {
  double rtol, atol;
};
Tol tol_for(const std::string& dt) { return dt == "f32" ? Tol{1e-5, 1e-6} : Tol{1e-10, 1e-13}; }
const std::vector<std::string> kDtypes = {"f32", "f64"};

// The fixture, remembering which tensors were read.
class Golden {
 public:
  Golden() : fx_("seq_ops") {}
  Tensor get(const std::string& name) {
    used_.insert(name);
    return fx_.get(name);
  }
  Tensor leaf(const std::string& name) {
    Tensor t = get(name).detach().clone();
    t.requires_grad_();
    return t;
  }
  const std::string& meta(const std::string& key) const { return fx_.meta(key); }
  // Fails listing the tensors whose name contains `part` (one test's share of the file) that no
  // comparison read, and any tensor that belongs to none of the parts.
  void check_all_used(const std::string& part) const {
    std::string unused;
    for (const auto& nt : fx_.tensors()) {
      const std::string& n = nt.first;
      const bool known = n.find("embedding.") != std::string::npos || n.find(".matmul_") != std::string::npos ||
                         n.find(".clip_") != std::string::npos;
      if (!known || (n.find(part) != std::string::npos && !used_.count(n))) unused += " " + n;
    }
    BOOST_TEST(unused.empty(), "tensors of the fixture never compared:" << unused);
  }

 private:
  normlab::test::Fixture fx_;
  std::set<std::string> used_;
};

void expect_close(Golden& g, const Tensor& got, const std::string& name, Tol tol) {
  const Tensor want = g.get(name);
  BOOST_TEST_CONTEXT("comparing with " << name) {
    BOOST_REQUIRE(got.defined());
    BOOST_REQUIRE(got.shape() == want.shape());
    BOOST_TEST((got.dtype() == want.dtype()));
    normlab::test::expect_elements_close(name, got.to_vector(), want.to_vector(), tol.rtol, tol.atol);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(seq_ops_parity)

BOOST_AUTO_TEST_CASE(embedding_matches_pytorch) {
  Golden g;
  const Tensor ids = g.get("embedding.ids");  // I64, read as float64 whole numbers
  for (const auto& dt : kDtypes) {
    BOOST_TEST_CONTEXT("embedding " << dt) {
      const std::string p = dt + ".embedding.";
      const Tensor w = g.get(p + "weight");
      Generator gen(0);
      Embedding e(w.size(0), w.size(1), gen, w.dtype());
      e.load_state_dict({{"weight", w}});
      const Tensor y = e(ids);
      expect_close(g, y, p + "output", {0, 0});  // row copies: exact
      y.backward(g.get(p + "grad_output"));
      expect_close(g, e.weight().grad(), p + "grad_weight", tol_for(dt));
    }
  }
  g.check_all_used("embedding.");
}

BOOST_AUTO_TEST_CASE(broadcast_matmul_matches_pytorch) {
  Golden g;
  const std::vector<std::string> cases = {"a4d_b3d", "a2d_b4d", "both_broadcast", "same_batch"};
  for (const auto& c : cases)
    for (const auto& dt : kDtypes) {
      BOOST_TEST_CONTEXT("matmul " << dt << "." << c) {
        const std::string p = dt + ".matmul_" + c + ".";
        const Tensor a = g.leaf(p + "a"), b = g.leaf(p + "b");
        BOOST_TEST(a.shape() == nlohmann::json::parse(g.meta("matmul_" + c + ".a_shape")).get<Shape>());
        BOOST_TEST(b.shape() == nlohmann::json::parse(g.meta("matmul_" + c + ".b_shape")).get<Shape>());
        const Tensor y = matmul(a, b);
        expect_close(g, y, p + "output", tol_for(dt));
        y.backward(g.get(p + "grad_output"));
        expect_close(g, a.grad(), p + "grad_a", tol_for(dt));
        expect_close(g, b.grad(), p + "grad_b", tol_for(dt));
      }
    }
  g.check_all_used(".matmul_");
}

BOOST_AUTO_TEST_CASE(clip_grad_norm_matches_pytorch) {
  Golden g;
  const int params = std::stoi(g.meta("clip.params"));
  BOOST_TEST(params == 3);
  const std::vector<std::string> cases = {"norm2", "norm_inf", "norm2_unclipped"};
  for (const auto& c : cases)
    for (const auto& dt : kDtypes) {
      BOOST_TEST_CONTEXT("clip_grad_norm_ " << dt << "." << c) {
        const std::string p = dt + ".clip_" + c + ".";
        std::vector<Tensor> ps;
        for (int j = 0; j < params; ++j) {
          const Tensor grad = g.get(p + "grad" + std::to_string(j)).detach().clone();
          Tensor prm = zeros_like(grad);
          prm.requires_grad_();
          prm.set_grad(grad);
          ps.push_back(prm);
        }
        const double total = clip_grad_norm_(ps, std::stod(g.meta("clip_" + c + ".max_norm")),
                                              std::stod(g.meta("clip_" + c + ".norm_type")));
        const Tensor want_total = g.get(p + "total_norm");
        BOOST_TEST(want_total.dim() == 0);
        normlab::test::expect_elements_close(p + "total_norm", {total}, want_total.to_vector(), tol_for(dt).rtol,
                                             tol_for(dt).atol);
        for (int j = 0; j < params; ++j) expect_close(g, ps[j].grad(), p + "clipped" + std::to_string(j), tol_for(dt));
      }
    }
  g.check_all_used(".clip_");
}

BOOST_AUTO_TEST_SUITE_END()
