// Optimizer base: parameter checks, learning rate, zero_grad, and the base state (lr, step).
#include "optim/optimizer.h"

#include <cmath>

#include "autograd/format.h"

namespace normlab::optim {

Optimizer::Optimizer(std::string name, std::vector<Tensor> params, double lr)
    : name_(std::move(name)), params_(std::move(params)), lr_(lr) {
  check(!params_.empty(), name_ + ": expected a non-empty list of parameters, got an empty list");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    check(p.defined(), name_ + ": parameter " + std::to_string(i) + " is an undefined tensor");
    check(p.is_leaf(), name_ + ": parameter " + std::to_string(i) +
                           " is not a leaf tensor (it was computed by an op); optimize the tensors "
                           "the model owns, e.g. Module::parameters()");
    for (size_t j = 0; j < i; ++j)
      check(!params_[j].is_same(p), name_ + ": parameter " + std::to_string(i) +
                                        " is the same tensor as parameter " + std::to_string(j) +
                                        "; each parameter must appear once");
  }
  check_lr(lr, name_);
}

void Optimizer::check_lr(double lr, const std::string& where) const {
  check(std::isfinite(lr) && lr >= 0, where + ": lr must be a finite number >= 0, got " + autograd::py_float(lr));
}

void Optimizer::set_lr(double lr) {
  check_lr(lr, name_ + ".set_lr");
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (const Tensor& p : params_) p.set_grad(Tensor());
}

OptimizerState Optimizer::state() const {
  OptimizerState s;
  s.scalars["lr"] = lr_;
  s.scalars["step"] = static_cast<double>(steps_);
  return s;
}

void Optimizer::load_state(const OptimizerState& state) {
  check_scalar_names(state, {"lr", "step"});
  check(state.tensors.empty(), name_ + ".load_state: expected no tensors, got " +
                                   std::to_string(state.tensors.size()) + " (first: \"" +
                                   (state.tensors.empty() ? "" : state.tensors[0].first) + "\")");
  const double lr = state.scalars.at("lr");
  check_lr(lr, name_ + ".load_state");
  const int64_t step = read_step(state);
  lr_ = lr;
  steps_ = step;
}

void Optimizer::check_scalar_names(const OptimizerState& state, const std::vector<std::string>& expected) const {
  std::string missing, unexpected;
  for (const std::string& k : expected)
    if (!state.scalars.count(k)) missing += (missing.empty() ? "\"" : ", \"") + k + "\"";
  for (const auto& [k, v] : state.scalars) {
    bool known = false;
    for (const std::string& e : expected) known |= (e == k);
    if (!known) unexpected += (unexpected.empty() ? "\"" : ", \"") + k + "\"";
  }
  if (missing.empty() && unexpected.empty()) return;
  std::string all;
  for (const std::string& k : expected) all += (all.empty() ? "\"" : ", \"") + k + "\"";
  std::string msg = name_ + ".load_state: expected the scalars " + all + ";";
  if (!missing.empty()) msg += " missing " + missing + ";";
  if (!unexpected.empty()) msg += " unexpected " + unexpected + ";";
  msg.pop_back();
  throw Error(msg);
}

int64_t Optimizer::read_step(const OptimizerState& state) const {
  const double step = state.scalars.at("step");
  check(std::isfinite(step) && step >= 0 && step == std::floor(step) && step < 9.0e15,
        name_ + ".load_state: scalar \"step\" must be a whole number >= 0, got " + autograd::py_float(step));
  return static_cast<int64_t>(step);
}

}  // namespace normlab::optim
