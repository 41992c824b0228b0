// Adam and AdamW: option checks, the step (one fused kernel call per parameter), and checkpoint state.
#include "optim/adam.h"

#include <cmath>
#include <set>
#include <utility>

#include "autograd/engine.h"
#include "base/format.h"
#include "optim/kernels/adam.h"

namespace normlab::optim {

namespace {

// The names of a parameter's state: tensors "<kind>.<i>" and scalar "step.<i>".
constexpr const char* kExpAvg = "exp_avg";
constexpr const char* kExpAvgSq = "exp_avg_sq";
constexpr const char* kMaxExpAvgSq = "max_exp_avg_sq";
constexpr const char* kStep = "step";

// The hyper-parameters shared by Adam and AdamW, as Adam's options.
AdamOptions adam_options(const AdamWOptions& o) {
  return {.lr = o.lr, .betas = o.betas, .eps = o.eps, .weight_decay = o.weight_decay, .amsgrad = o.amsgrad,
          .maximize = o.maximize};
}

}  // namespace

void Adam::check_options(const AdamOptions& o, const std::string& where) {
  check(std::isfinite(o.lr) && o.lr >= 0, where + ": lr must be a finite number >= 0, got " + base::py_float(o.lr));
  for (int k = 0; k < 2; ++k)
    check(o.betas[k] >= 0 && o.betas[k] < 1,  // false for NaN
          where + ": betas[" + std::to_string(k) + "] must be in [0, 1), got " + base::py_float(o.betas[k]));
  check(std::isfinite(o.eps) && o.eps >= 0,
        where + ": eps must be a finite number >= 0, got " + base::py_float(o.eps));
  check(std::isfinite(o.weight_decay) && o.weight_decay >= 0,
        where + ": weight_decay must be a finite number >= 0, got " + base::py_float(o.weight_decay));
}

void AdamW::check_options(const AdamWOptions& o, const std::string& where) {
  Adam::check_options(adam_options(o), where);
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam("Adam", std::move(params), options, false) {}

Adam::Adam(std::string name, std::vector<Tensor> params, const AdamOptions& options, bool decoupled)
    : Optimizer(std::move(name), std::move(params), options.lr),
      opts_(options),
      decoupled_(decoupled),
      state_(params_.size()) {
  check_options(options, name_);
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : Adam("AdamW", std::move(params), adam_options(options), true) {}

AdamOptions Adam::options() const {
  AdamOptions o = opts_;
  o.lr = lr_;
  return o;
}

AdamWOptions AdamW::options() const {
  const AdamOptions o = Adam::options();
  return {.lr = o.lr, .betas = o.betas, .eps = o.eps, .weight_decay = o.weight_decay, .amsgrad = o.amsgrad,
          .maximize = o.maximize};
}

void Adam::step() {
  autograd::NoGradGuard no_grad;
  kernels::AdamStep s;
  s.lr = lr_;
  s.beta1 = opts_.betas[0];
  s.beta2 = opts_.betas[1];
  s.eps = opts_.eps;
  s.weight_decay = opts_.weight_decay;
  s.decoupled = decoupled_;
  s.amsgrad = opts_.amsgrad;
  s.maximize = opts_.maximize;
  check_grads();  // all first, so that a bad one leaves all parameters as they were
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;  // no gradient: skipped, state untouched (as PyTorch)
    ParamState& st = state_[i];
    if (st.step == 0) {  // lazy state initialization, as PyTorch: the moments start at zero
      st.exp_avg = autograd::zeros(p.shape(), p.dtype());
      st.exp_avg_sq = autograd::zeros(p.shape(), p.dtype());
      if (opts_.amsgrad) st.max_exp_avg_sq = autograd::zeros(p.shape(), p.dtype());
    }
    s.step = ++st.step;
    autograd::dispatch(p.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* vmax = opts_.amsgrad ? st.max_exp_avg_sq.data<T>() : nullptr;
      kernels::adam_step(s, p.numel(), p.data<T>(), g.data<T>(), st.exp_avg.data<T>(), st.exp_avg_sq.data<T>(), vmax);
    });
  }
  ++steps_;
}

OptimizerState Adam::state() const {
  OptimizerState out;
  out.scalars = {{"lr", lr_},
                 {"beta1", opts_.betas[0]},
                 {"beta2", opts_.betas[1]},
                 {"eps", opts_.eps},
                 {"weight_decay", opts_.weight_decay},
                 {"amsgrad", opts_.amsgrad ? 1.0 : 0.0},
                 {"maximize", opts_.maximize ? 1.0 : 0.0},
                 {"decoupled_weight_decay", decoupled_ ? 1.0 : 0.0},
                 {"step", static_cast<double>(steps_)}};
  for (size_t i = 0; i < state_.size(); ++i) {
    const ParamState& st = state_[i];
    if (st.step == 0) continue;
    out.tensors.emplace_back(indexed(kExpAvg, i), st.exp_avg.detach().clone());
    out.tensors.emplace_back(indexed(kExpAvgSq, i), st.exp_avg_sq.detach().clone());
    if (opts_.amsgrad) out.tensors.emplace_back(indexed(kMaxExpAvgSq, i), st.max_exp_avg_sq.detach().clone());
    out.scalars[indexed(kStep, i)] = static_cast<double>(st.step);
  }
  return out;
}

void Adam::load_state(const OptimizerState& st) {
  const std::string where = name_ + ".load_state";
  // The fixed scalars, and a "step.<i>" for each parameter with state (checked below).
  std::vector<std::string> names = {"lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "maximize",
                                    "decoupled_weight_decay", "step"};
  for (const auto& [k, v] : st.scalars) {
    const auto [kind, i] = split_indexed(k);
    if (kind == kStep && i >= 0) names.push_back(k);
  }
  check_scalar_names(st, names);
  AdamOptions o;
  o.lr = st.scalars.at("lr");
  o.betas = {st.scalars.at("beta1"), st.scalars.at("beta2")};
  o.eps = st.scalars.at("eps");
  o.weight_decay = st.scalars.at("weight_decay");
  o.amsgrad = read_flag(st, "amsgrad");
  o.maximize = read_flag(st, "maximize");
  const bool decoupled = read_flag(st, "decoupled_weight_decay");
  check(decoupled == decoupled_, where + ": this is " + (decoupled ? "an AdamW" : "an Adam") +
                                     " state (scalar \"decoupled_weight_decay\" is " + (decoupled ? "1" : "0") +
                                     "); " + name_ + " needs " + (decoupled_ ? "1" : "0"));
  check_options(o, where);
  const int64_t step = read_step(st);

  // The per-parameter step counts.
  std::vector<ParamState> state(params_.size());
  for (const auto& [k, v] : st.scalars) {
    const auto [kind, i] = split_indexed(k);
    if (kind != kStep || i < 0) continue;
    check_param_index(k, i);
    check(std::isfinite(v) && v >= 1 && v == std::floor(v) && v <= static_cast<double>(step),
          where + ": scalar \"" + k + "\" must be a whole number from 1 to \"step\" (" + std::to_string(step) +
              "), got " + base::py_float(v));
    state[i].step = static_cast<int64_t>(v);
  }
  // The moments.
  std::set<std::string> seen;
  for (const auto& [name, t] : st.tensors) {
    const auto [kind, i] = split_indexed(name);
    check(i >= 0 && (kind == kExpAvg || kind == kExpAvgSq || kind == kMaxExpAvgSq),
          where + ": expected tensors named \"exp_avg.<i>\", \"exp_avg_sq.<i>\" or \"max_exp_avg_sq.<i>\" (i = "
                  "parameter index), got \"" + name + "\"");
    check_param_index(name, i);
    check(seen.insert(name).second, where + ": \"" + name + "\" appears more than once");
    check(kind != kMaxExpAvgSq || o.amsgrad,
          where + ": got \"" + name + "\", but amsgrad is 0, which keeps no max_exp_avg_sq");
    check_like_param(name, i, t);
    ParamState& ps = state[i];
    (kind == kExpAvg ? ps.exp_avg : kind == kExpAvgSq ? ps.exp_avg_sq : ps.max_exp_avg_sq) = t;
  }
  // Each parameter's state whole or absent: its step count and all of its moments, or none of them.
  for (size_t i = 0; i < state.size(); ++i) {
    std::vector<std::pair<std::string, bool>> parts = {{indexed(kStep, i), state[i].step > 0},
                                                       {indexed(kExpAvg, i), state[i].exp_avg.defined()},
                                                       {indexed(kExpAvgSq, i), state[i].exp_avg_sq.defined()}};
    if (o.amsgrad) parts.emplace_back(indexed(kMaxExpAvgSq, i), state[i].max_exp_avg_sq.defined());
    std::string present, missing;
    for (const auto& [k, has] : parts) (has ? present : missing) += std::string(", \"") + k + "\"";
    if (!present.empty() && !missing.empty())
      throw Error(where + ": the state of parameter " + std::to_string(i) + " is incomplete: it has " +
                  present.substr(2) + " but not " + missing.substr(2));
  }
  // Everything checked: commit (copies, so the optimizer never shares data with the caller).
  for (ParamState& ps : state)
    for (Tensor* t : {&ps.exp_avg, &ps.exp_avg_sq, &ps.max_exp_avg_sq})
      if (t->defined()) *t = t->detach().clone();
  lr_ = o.lr;
  opts_ = o;
  steps_ = step;
  state_ = std::move(state);
}

}  // namespace normlab::optim
