// Optimizer base: parameter checks, learning rate, zero_grad, the base state (lr, step), and the
// checks and state names that SGD and Adam share.
#include "optim/optimizer.h"

#include <cmath>

#include "base/format.h"

namespace normlab::optim {

using autograd::dtype_name;
using autograd::shape_str;

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
  check(std::isfinite(lr) && lr >= 0, where + ": lr must be a finite number >= 0, got " + base::py_float(lr));
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
        name_ + ".load_state: scalar \"step\" must be a whole number >= 0, got " + base::py_float(step));
  return static_cast<int64_t>(step);
}

bool Optimizer::read_flag(const OptimizerState& state, const std::string& name) const {
  const double v = state.scalars.at(name);
  check(v == 0 || v == 1,
        name_ + ".load_state: scalar \"" + name + "\" must be 0 or 1, got " + base::py_float(v));
  return v == 1;
}

void Optimizer::check_grads() const {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = params_[i].grad();
    if (g.defined() && (g.shape() != params_[i].shape() || g.dtype() != params_[i].dtype()))
      throw Error(name_ + ".step: the gradient of parameter " + std::to_string(i) + " must be " +
                  shape_str(params_[i].shape()) + " " + dtype_name(params_[i].dtype()) + ", got " +
                  shape_str(g.shape()) + " " + dtype_name(g.dtype()));
  }
}

std::string Optimizer::indexed(const std::string& kind, size_t i) { return kind + "." + std::to_string(i); }

std::pair<std::string, int64_t> Optimizer::split_indexed(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size() || name.size() - dot - 1 > 15) return {name, -1};
  int64_t i = 0;
  for (size_t k = dot + 1; k < name.size(); ++k) {
    if (name[k] < '0' || name[k] > '9') return {name, -1};
    i = i * 10 + (name[k] - '0');
  }
  if (name.size() - dot - 1 > 1 && name[dot + 1] == '0') return {name, -1};  // no leading zeros
  return {name.substr(0, dot), i};
}

void Optimizer::check_param_index(const std::string& name, int64_t i) const {
  const size_t n = params_.size();
  check(i < static_cast<int64_t>(n), name_ + ".load_state: \"" + name + "\" names parameter " + std::to_string(i) +
                                         ", but this optimizer has " + std::to_string(n) + " parameters (indices 0 to " +
                                         std::to_string(n - 1) + ")");
}

void Optimizer::check_like_param(const std::string& name, size_t i, const Tensor& t) const {
  const std::string where = name_ + ".load_state";
  check(t.defined(), where + ": \"" + name + "\" is an undefined tensor");
  const Tensor& p = params_[i];
  check(t.shape() == p.shape() && t.dtype() == p.dtype(),
        where + ": \"" + name + "\" must be " + shape_str(p.shape()) + " " + dtype_name(p.dtype()) +
            " like parameter " + std::to_string(i) + ", got " + shape_str(t.shape()) + " " + dtype_name(t.dtype()));
}

}  // namespace normlab::optim
