// The step measures (internal covariate shift, the landscape along the gradient) and the curvature
// of a batch loss, each evaluating the model at other weights and putting it back bit for bit.
#include "experiments/run/landscape.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "autograd/autograd.h"
#include "base/error.h"

namespace normlab::experiments {

using autograd::Tensor;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// sum_i a_i b_i over a tensor's elements, in double, in index order.
template <typename T>
double dot_of(const T* a, const T* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}

double dot(const Tensor& a, const Tensor& b) {
  if (a.dtype() == autograd::DType::Float64) return dot_of(a.data<double>(), b.data<double>(), a.numel());
  return dot_of(a.data<float>(), b.data<float>(), a.numel());
}

// sum_i (a_i - b_i)^2, in double.
template <typename T>
double dist2_of(const T* a, const T* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    s += d * d;
  }
  return s;
}

double dist2(const Tensor& a, const Tensor& b) {
  if (a.dtype() == autograd::DType::Float64) return dist2_of(a.data<double>(), b.data<double>(), a.numel());
  return dist2_of(a.data<float>(), b.data<float>(), a.numel());
}

// Copies values into the parameters, in place, unrecorded.
void assign(const std::vector<Tensor>& params, const std::vector<Tensor>& values) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) autograd::copy_(params[i], values[i]);
}

// The layer key of a parameter name: its top-level module ("3" of "3.weight"), and for a layer of an
// LSTM the layer's index ("1/l0" of "1.weight_hh_l0").
std::string layer_key(const std::string& name) {
  static const std::regex lstm_layer("_l([0-9]+)(_reverse)?$");
  const std::string top = name.substr(0, name.find('.'));
  std::smatch m;
  if (std::regex_search(name, m, lstm_layer)) return top + "/l" + m[1].str();
  return top;
}

}  // namespace

std::vector<ParamLayer> param_layers(const Model& model) {
  std::set<std::string> weights;
  for (const auto& [name, w] : model.weights) weights.insert(name);
  std::vector<ParamLayer> layers;
  std::string key;
  for (const auto& [name, p] : model.net->named_parameters()) {
    const bool starts = weights.count(name) && (layers.empty() || layer_key(name) != key);
    if (starts || layers.empty()) {
      layers.push_back({name, {}});
      key = layer_key(name);
    }
    layers.back().params.push_back(p);
  }
  return layers;
}

ModuleState::ModuleState(const nn::Module& m) {
  std::set<const void*> buffers;
  for (const auto& [name, t] : m.named_buffers()) buffers.insert(t.raw_data());
  for (const auto& [name, t] : m.state_dict()) {
    handles_.push_back(t);
    values_.push_back(t.detach().clone());
    is_buffer_.push_back(buffers.count(t.raw_data()) > 0);
  }
}

void ModuleState::restore() const {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < handles_.size(); ++i) autograd::copy_(handles_[i], values_[i]);
}

void ModuleState::restore_buffers() const {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < handles_.size(); ++i)
    if (is_buffer_[i]) autograd::copy_(handles_[i], values_[i]);
}

const Tensor& ModuleState::value_of(const Tensor& t) const {
  for (size_t i = 0; i < handles_.size(); ++i)
    if (handles_[i].raw_data() == t.raw_data()) return values_[i];
  throw Error("ModuleState: the tensor is not one of the module's parameters or buffers");
}

StepMeasures measure_step(const StepProbe& probe, const ModuleState& before, const std::vector<double>& etas) {
  const ModuleState after(probe.module);  // w_{t+1}, and the buffers the step left
  std::vector<Tensor> params, w0, w1;
  std::vector<size_t> layer_of;  // the layer of each parameter
  for (size_t i = 0; i < probe.layers.size(); ++i)
    for (const Tensor& p : probe.layers[i].params) {
      params.push_back(p), layer_of.push_back(i);
      w0.push_back(before.value_of(p)), w1.push_back(after.value_of(p));
    }
  // The loss and the gradient (every parameter's: the same backward pass each time, so that equal
  // weights give equal gradients, bit for bit) at the parameters' current values, from the
  // buffers the step started from.
  const auto gradient_here = [&](double* loss) {
    before.restore_buffers();
    const Tensor l = probe.loss();
    if (loss) *loss = l.item();
    std::vector<Tensor> g = autograd::grad({l}, params, {}, autograd::GradOptions{.allow_unused = true});
    for (size_t j = 0; j < g.size(); ++j)
      if (!g[j].defined()) g[j] = autograd::zeros_like(params[j]);
    return g;
  };
  StepMeasures out;
  assign(params, w0);
  const std::vector<Tensor> g = gradient_here(nullptr);
  // ICS of layer i: layers before i at w_{t+1}, the rest at w_t.
  for (size_t i = 0; i < probe.layers.size(); ++i) {
    std::vector<Tensor> mixed(params.size());
    for (size_t j = 0; j < params.size(); ++j) mixed[j] = layer_of[j] < i ? w1[j] : w0[j];
    assign(params, mixed);
    const std::vector<Tensor> g2 = i == 0 ? g : gradient_here(nullptr);  // layer 0: nothing precedes it
    double d2 = 0, gg = 0, g2g2 = 0, gg2 = 0;
    for (size_t j = 0; j < params.size(); ++j)
      if (layer_of[j] == i) d2 += dist2(g[j], g2[j]), gg += dot(g[j], g[j]), g2g2 += dot(g2[j], g2[j]), gg2 += dot(g[j], g2[j]);
    LayerShift s;
    s.layer = probe.layers[i].name;
    s.ics = std::sqrt(d2);
    s.relative = gg > 0 ? s.ics / std::sqrt(gg) : kNaN;
    s.cosine = gg > 0 && g2g2 > 0 ? gg2 / std::sqrt(gg * g2g2) : kNaN;
    out.shifts.push_back(s);
  }
  // The landscape along -g: L(w_t - eta g) and ||g - g(w_t - eta g)||.
  Landscape& land = out.landscape;
  double gnorm2 = 0;
  for (size_t j = 0; j < params.size(); ++j) gnorm2 += dot(g[j], g[j]);
  land.grad_norm = std::sqrt(gnorm2);
  double lo = INFINITY, hi = -INFINITY;
  for (double eta : etas) {
    std::vector<Tensor> moved(params.size());
    {
      autograd::NoGradGuard no_grad;
      for (size_t j = 0; j < params.size(); ++j) moved[j] = autograd::sub(w0[j], autograd::mul(g[j], eta));
    }
    assign(params, moved);
    LandscapePoint pt;
    pt.eta = eta;
    const std::vector<Tensor> g2 = gradient_here(&pt.loss);
    double d2 = 0;
    for (size_t j = 0; j < params.size(); ++j) d2 += dist2(g[j], g2[j]);
    pt.grad_change = std::sqrt(d2);
    lo = std::min(lo, pt.loss), hi = std::max(hi, pt.loss);
    land.grad_predictiveness = std::max(land.grad_predictiveness, pt.grad_change);
    if (eta > 0 && land.grad_norm > 0)
      land.beta_smoothness = std::max(land.beta_smoothness, pt.grad_change / (eta * land.grad_norm));
    land.points.push_back(pt);
  }
  land.loss_variation = etas.empty() ? 0 : hi - lo;
  after.restore();
  return out;
}

Curvature measure_curvature(nn::Module& module, const std::vector<Tensor>& params, const BatchLoss& loss,
                            const autograd::PowerIterationOptions& power, const autograd::TraceOptions& trace) {
  const ModuleState state(module);
  Curvature c;
  {
    const autograd::HessianOperator h(loss(), params);
    c.top = autograd::top_eigenvalue(h, power);
    c.trace = autograd::hessian_trace(h, trace);
  }
  state.restore();
  return c;
}

}  // namespace normlab::experiments
