// The step measures and the curvature on cases with known answers: ICS is 0 for the first layer and
// for layers whose predecessors did not move, and equals a gradient computed by hand otherwise; the
// landscape of a quadratic loss gives its known losses, gradient changes and beta; the curvature of
// a quadratic is its matrix's top eigenvalue and trace; every measure leaves the model bit for bit
// as it found it (weights, BatchNorm's running statistics, a noisy BatchNorm's step).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "experiments/models/model.h"
#include "experiments/run/landscape.h"
#include "nn/module.h"

using namespace normlab;
using namespace normlab::experiments;
using autograd::Tensor;

namespace {

Model mlp(const std::string& norm, std::vector<int64_t> hidden = {6, 5}) {
  ModelSpec s;
  s.inputs = 4, s.hidden = std::move(hidden), s.outputs = 3, s.norm = norm;
  autograd::Generator gen(1);
  return build_model(s, gen);
}

struct Batch {
  Tensor x;
  std::vector<int64_t> y;
};
Batch batch(int64_t n, uint64_t seed) {
  autograd::Generator gen(seed);
  Batch b{autograd::randn({n, 4}, gen), {}};
  for (int64_t i = 0; i < n; ++i) b.y.push_back(static_cast<int64_t>(gen.next_u64() % 3));
  return b;
}

std::vector<std::vector<double>> state_values(const nn::Module& m) {
  std::vector<std::vector<double>> v;
  for (const auto& [name, t] : m.state_dict()) v.push_back(t.to_vector());
  return v;
}

// Adds delta times a fixed pattern to every parameter of the given layers (a "step" of those only).
void move_layers(const std::vector<ParamLayer>& layers, const std::vector<size_t>& which, double delta) {
  autograd::NoGradGuard no_grad;
  for (size_t i : which)
    for (const Tensor& p : layers[i].params)
      for (int64_t k = 0; k < p.numel(); ++k) p.set_flat(k, p.flat(k) + delta * std::sin(double(k + 1)));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(landscape)

BOOST_AUTO_TEST_CASE(layers_are_a_weight_layer_with_the_norm_after_it) {
  const Model m = mlp("batch");
  const std::vector<ParamLayer> layers = param_layers(m);
  BOOST_TEST_REQUIRE(layers.size() == 3u);
  BOOST_TEST(layers[0].name == "0.weight");
  BOOST_TEST(layers[0].params.size() == 4u);  // Linear weight, bias, BatchNorm weight, bias
  BOOST_TEST(layers[1].params.size() == 4u);
  BOOST_TEST(layers[2].params.size() == 2u);  // the output Linear
  size_t n = 0;
  for (const ParamLayer& l : layers) n += l.params.size();
  BOOST_TEST(n == m.net->parameters().size());
  ModelSpec lstm;
  lstm.arch = "lstm", lstm.inputs = 12, lstm.image = {1, 3, 4}, lstm.hidden = {5, 5}, lstm.outputs = 3;
  autograd::Generator gen(2);
  const Model r = build_model(lstm, gen);
  const std::vector<ParamLayer> rl = param_layers(r);
  BOOST_TEST_REQUIRE(rl.size() == 3u);  // LSTM layer 0, layer 1, the output Linear
  BOOST_TEST(rl[0].name == "1.weight_ih_l0");
  BOOST_TEST(rl[0].params.size() == 4u);
  BOOST_TEST(rl[1].name == "1.weight_ih_l1");
  BOOST_TEST(rl[2].name == "3.weight");
}

BOOST_AUTO_TEST_CASE(ics_is_zero_where_no_preceding_layer_moved_and_a_hand_gradient_elsewhere) {
  for (const std::string norm : {"none", "batch", "noisybatch", "layer"}) {
    const Model m = mlp(norm);
    const std::vector<ParamLayer> layers = param_layers(m);
    const Batch b = batch(8, 3);
    const BatchLoss loss = [&] { return autograd::cross_entropy((*m.net)(b.x), b.y); };
    const StepProbe probe{*m.net, layers, loss};
    // A step of the last two layers only: the first two layers' predecessors did not move.
    const ModuleState before(*m.net);
    move_layers(layers, {1, 2}, 0.05);
    const auto entry = state_values(*m.net);
    StepMeasures s = measure_step(probe, before, {});
    BOOST_TEST_REQUIRE(s.shifts.size() == 3u);
    BOOST_TEST(s.shifts[0].ics == 0.0);
    BOOST_TEST(s.shifts[1].ics == 0.0, norm << ": layer 1's predecessor did not move");
    BOOST_TEST(s.shifts[1].cosine == 1.0, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(s.shifts[2].ics > 0.0, norm << ": layer 1 moved, so layer 2's gradient changes");
    BOOST_TEST(state_values(*m.net) == entry, norm << ": the model is left as it was");
    // A step of every layer; layer 2's G' by hand: layers 0 and 1 at the new weights, 2 at the old.
    before.restore();
    move_layers(layers, {0, 1, 2}, 0.05);
    const ModuleState after(*m.net);
    s = measure_step(probe, before, {});
    const auto hand_gradient = [&](bool moved) {
      before.restore();
      if (moved) {
        autograd::NoGradGuard no_grad;
        for (size_t i : {size_t(0), size_t(1)})
          for (const Tensor& p : layers[i].params) autograd::copy_(p, after.value_of(p));
      }
      for (const Tensor& p : m.net->parameters()) p.set_grad(Tensor());
      loss().backward();
      std::vector<double> g;
      for (const Tensor& p : layers[2].params)
        for (double v : p.grad().to_vector()) g.push_back(v);
      return g;
    };
    const std::vector<double> g = hand_gradient(false), g2 = hand_gradient(true);
    double d2 = 0, gg = 0;
    for (size_t k = 0; k < g.size(); ++k) d2 += (g[k] - g2[k]) * (g[k] - g2[k]), gg += g[k] * g[k];
    BOOST_TEST(s.shifts[2].ics == std::sqrt(d2), boost::test_tools::tolerance(1e-5));
    BOOST_TEST(s.shifts[2].relative == std::sqrt(d2 / gg), boost::test_tools::tolerance(1e-5));
    after.restore();
  }
}

BOOST_AUTO_TEST_CASE(measures_leave_batchnorm_statistics_and_the_noise_as_they_were) {
  for (const std::string norm : {"batch", "noisybatch"}) {
    const Model m = mlp(norm);
    const std::vector<ParamLayer> layers = param_layers(m);
    const Batch b = batch(8, 4);
    const BatchLoss loss = [&] { return autograd::cross_entropy((*m.net)(b.x), b.y); };
    const ModuleState before(*m.net);
    loss();  // the step's forward pass moves the buffers
    move_layers(layers, {0, 1, 2}, 0.01);
    const auto entry = state_values(*m.net);
    measure_step({*m.net, layers, loss}, before, {0.025, 0.05, 0.1});
    BOOST_TEST(state_values(*m.net) == entry, norm);
    std::vector<Tensor> params = m.net->parameters();
    measure_curvature(*m.net, params, loss, {.max_iters = 5}, {.samples = 3});
    BOOST_TEST(state_values(*m.net) == entry, norm);
  }
}

// L(w) = 1/2 w^T A w for a symmetric A: g = A w, H = A.
class Quadratic : public nn::Module {
 public:
  Quadratic(std::vector<double> w, std::vector<double> a) : n_(static_cast<int64_t>(w.size())) {
    w_ = register_parameter("w", autograd::tensor(w, {n_, 1}, autograd::DType::Float64));
    a_ = autograd::tensor(a, {n_, n_}, autograd::DType::Float64);
  }
  Tensor forward(const Tensor&) override { return Tensor(); }
  std::string repr() const override { return "Quadratic"; }
  Tensor loss() const {
    return autograd::mul(autograd::sum(autograd::mul(w_, autograd::matmul(a_, w_))), 0.5);
  }
  std::vector<double> a_times(const std::vector<double>& v) const {
    std::vector<double> out(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i)
      for (int64_t j = 0; j < n_; ++j) out[i] += a_.flat(i * n_ + j) * v[j];
    return out;
  }
  const Tensor& w() const { return w_; }

 private:
  int64_t n_;
  Tensor w_, a_;
};

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

BOOST_AUTO_TEST_CASE(the_landscape_of_a_quadratic_is_its_closed_form) {
  // A = [[4, 1, 0], [1, 3, 0], [0, 0, -1]]: along -g, g(w - eta g) = g - eta A g, so the gradient
  // changes by eta ||A g|| and beta = ||A g|| / ||g|| at every eta; L(w - eta g) = L - eta g^T g +
  // eta^2/2 g^T A g.
  const std::vector<double> a{4, 1, 0, 1, 3, 0, 0, 0, -1}, w{0.5, -1, 2};
  Quadratic q(w, a);
  const std::vector<ParamLayer> layers{{"w", {q.w()}}};
  const BatchLoss loss = [&] { return q.loss(); };
  const ModuleState before(q);
  const std::vector<double> g = q.a_times(w), ag = q.a_times(g);
  double gg = 0, gag = 0, l0 = 0;
  for (size_t i = 0; i < 3; ++i) gg += g[i] * g[i], gag += g[i] * ag[i], l0 += 0.5 * w[i] * g[i];
  const std::vector<double> etas{0.01, 0.02, 0.04, 0.08, 0.16};
  const StepMeasures s = measure_step({q, layers, loss}, before, etas);
  BOOST_TEST(s.landscape.grad_norm == std::sqrt(gg), boost::test_tools::tolerance(1e-12));
  double lo = INFINITY, hi = -INFINITY;
  for (size_t k = 0; k < etas.size(); ++k) {
    const double eta = etas[k], want = l0 - eta * gg + 0.5 * eta * eta * gag;
    BOOST_TEST(s.landscape.points[k].loss == want, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(s.landscape.points[k].grad_change == eta * norm2(ag), boost::test_tools::tolerance(1e-12));
    lo = std::min(lo, want), hi = std::max(hi, want);
  }
  BOOST_TEST(s.landscape.loss_variation == hi - lo, boost::test_tools::tolerance(1e-10));
  BOOST_TEST(s.landscape.grad_predictiveness == 0.16 * norm2(ag), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.landscape.beta_smoothness == norm2(ag) / norm2(g), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.shifts.size() == 1u);
  BOOST_TEST(s.shifts[0].ics == 0.0);  // one layer: nothing precedes it
  BOOST_TEST(q.w().to_vector() == w, boost::test_tools::per_element());
  // With g an eigenvector of A (w = e3, eigenvalue -1), beta is that eigenvalue's magnitude.
  Quadratic e({0, 0, 1}, a);
  const std::vector<ParamLayer> el{{"w", {e.w()}}};
  const StepMeasures se = measure_step({e, el, [&] { return e.loss(); }}, ModuleState(e), {0.1, 0.2});
  BOOST_TEST(se.landscape.beta_smoothness == 1.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_curvature_of_a_quadratic_is_its_top_eigenvalue_and_trace) {
  // Eigenvalues of A: (7 +- sqrt(5)) / 2 = 4.618 and 2.382, and -6: the largest magnitude is -6,
  // reported with its sign; the trace is 1.
  const std::vector<double> a{4, 1, 0, 1, 3, 0, 0, 0, -6};
  Quadratic q({0.3, 0.2, -0.1}, a);
  const Curvature c = measure_curvature(q, {q.w()}, [&] { return q.loss(); }, {.max_iters = 500, .tol = 1e-10},
                                        {.samples = 4000, .seed = 3});
  BOOST_TEST(c.top.eigenvalue == -6.0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(c.top.converged);
  BOOST_TEST(std::abs(c.trace.trace - 1.0) < 4 * c.trace.standard_error);
  BOOST_TEST(c.trace.standard_error < 0.05);
}

BOOST_AUTO_TEST_SUITE_END()
