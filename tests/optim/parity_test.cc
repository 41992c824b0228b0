// PyTorch parity of SGD: every flag combination of tests/fixtures/sgd.safetensors (torch.optim.SGD in
// PyTorch 1.13, made by scripts/make_fixtures.py) replayed over its 5 steps and compared after each
// step, and the combinations PyTorch refuses (Nesterov without momentum or with dampening) refused.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "optim/sgd.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"

using namespace normlab::autograd;
using namespace normlab::optim;
using normlab::Error;
using normlab::test::Fixture;

namespace {

// The parity tolerances, without the absolute floor tests/nn/parity_test.cc needs: |got - want| <=
// rtol |want|, float32 1e-5, float64 1e-10. An SGD update p - lr * g has no cancelling sums in
// these fixtures: measured with each Highway target pinned in turn, the largest relative error is
// 2.0e-6 in float32 (m0d1n0w1x0.step5) and 4.0e-15 in float64, and no element needed a floor.
struct Tol {
  double rtol, atol;
};
Tol tol_for(const std::string& dt) { return dt == "f32" ? Tol{1e-5, 0} : Tol{1e-10, 0}; }

// "a,b,c" -> {"a", "b", "c"}.
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

// The flags of a case name "m<M>d<D>n<N>w<W>x<X>" (each 0 or 1) as SGD's options, with the fixture's
// values for the flags that are 1.
SGDOptions options_of(const Fixture& fx, const std::string& name) {
  BOOST_REQUIRE_MESSAGE(name.size() == 10 && name[0] == 'm' && name[2] == 'd' && name[4] == 'n' && name[6] == 'w' &&
                            name[8] == 'x',
                        "unexpected SGD case name " << name);
  auto bit = [&](size_t i) {
    BOOST_REQUIRE_MESSAGE(name[i] == '0' || name[i] == '1', "unexpected SGD case name " << name);
    return name[i] == '1';
  };
  SGDOptions o;
  o.lr = std::stod(fx.meta("lr"));
  o.momentum = bit(1) ? std::stod(fx.meta("momentum")) : 0;
  o.dampening = bit(3) ? std::stod(fx.meta("dampening")) : 0;
  o.nesterov = bit(5);
  o.weight_decay = bit(7) ? std::stod(fx.meta("weight_decay")) : 0;
  o.maximize = bit(9);
  return o;
}

// Compares parameter p with the fixture's tensor `name`, naming it, the first bad element and the
// largest error on failure.
void expect_close(const Tensor& got, const Tensor& want, const std::string& name, Tol tol) {
  BOOST_TEST_CONTEXT("comparing with " << name) {
    if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
      BOOST_ERROR(name << ": shape " << shape_str(got.shape()) << " " << dtype_name(got.dtype()) << ", PyTorch's "
                       << shape_str(want.shape()) << " " << dtype_name(want.dtype()));
      return;
    }
    normlab::test::expect_elements_close(name, got.to_vector(), want.to_vector(), tol.rtol, tol.atol);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(optim_parity)

BOOST_AUTO_TEST_CASE(sgd_matches_pytorch_for_every_flag_combination) {
  const Fixture fx("sgd");
  const std::vector<std::string> valid = split(fx.meta("cases")), invalid = split(fx.meta("invalid_cases"));
  // Together the 32 combinations of 5 flags, each once: 20 valid, 12 refused.
  BOOST_TEST(valid.size() == 20u);
  BOOST_TEST(invalid.size() == 12u);
  std::set<std::string> all(valid.begin(), valid.end());
  all.insert(invalid.begin(), invalid.end());
  BOOST_TEST(all.size() == 32u);

  const int steps = std::stoi(fx.meta("steps"));
  BOOST_TEST(steps == 5);
  size_t compared = 0;
  for (const std::string dt : {"f32", "f64"}) {
    const Tol tol = tol_for(dt);
    for (const auto& name : valid)
      BOOST_TEST_CONTEXT("SGD case " << dt << "." << name) {
        const SGDOptions o = options_of(fx, name);
        Tensor p = fx.get(dt + ".param0").detach().clone();
        p.requires_grad_();
        SGD opt({p}, o);
        for (int k = 1; k <= steps; ++k) {
          const std::string kk = std::to_string(k);
          p.set_grad(fx.get(dt + ".grad" + kk).detach().clone());
          opt.step();
          expect_close(p, fx.get(dt + "." + name + ".step" + kk), dt + "." + name + ".step" + kk, tol);
          ++compared;
        }
      }
  }
  // Every parameter snapshot of the fixture was compared: 2 dtypes x 20 cases x 5 steps, plus the
  // initial parameter and the 5 gradients per dtype.
  BOOST_TEST(compared == 2 * valid.size() * steps);
  BOOST_TEST(fx.tensors().size() == compared + 2 * (1 + steps));
}

BOOST_AUTO_TEST_CASE(sgd_refuses_the_nesterov_combinations_pytorch_refuses) {
  const Fixture fx("sgd");
  for (const auto& name : split(fx.meta("invalid_cases")))
    BOOST_TEST_CONTEXT("SGD case " << name) {
      const SGDOptions o = options_of(fx, name);
      BOOST_TEST(o.nesterov);
      BOOST_TEST((o.momentum == 0 || o.dampening != 0));
      Tensor p = fx.get("f32.param0").detach().clone();
      p.requires_grad_();
      BOOST_CHECK_EXCEPTION(SGD({p}, o), Error, [](const Error& e) {
        // PyTorch's own message: "Nesterov momentum requires a momentum and zero dampening".
        return std::string(e.what()).find("Nesterov momentum requires a momentum and zero dampening") !=
               std::string::npos;
      });
    }
}

BOOST_AUTO_TEST_SUITE_END()
