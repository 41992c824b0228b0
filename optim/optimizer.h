// Optimizer: the base of every optimizer, a list of parameters updated in place, a learning rate,
// zero_grad(), and the state an optimizer saves in (and restores from) a checkpoint.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace normlab::optim {

using autograd::Tensor;

/// What an optimizer saves in a checkpoint: named tensors (such as "momentum_buffer.0") and named
/// numbers (hyper-parameters, the step count; booleans as 0 or 1). The tensors are copies: they do
/// not change when the optimizer steps on.
struct OptimizerState {
  std::vector<std::pair<std::string, autograd::Tensor>> tensors;  ///< named tensors
  std::map<std::string, double> scalars;  ///< named numbers
};

/// The base of the optimizers: the parameters, the learning rate, the step count and a checkpointable state.
class Optimizer {
 public:
  /// Optimizes `params`, shared handles to a model's parameters (such as Module::parameters()): step()
  /// updates their data in place. Throws unless the list is non-empty and holds defined leaf tensors,
  /// each once, and lr >= 0. `name` (e.g. "SGD") prefixes error messages.
  Optimizer(std::string name, std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;  ///< Virtual: optimizers are used through the base.
  Optimizer(const Optimizer&) = delete;  ///< Not copyable (it holds per-parameter state).
  Optimizer& operator=(const Optimizer&) = delete;  ///< Not copyable.

  /// The parameters, in the order given (parameter i's state is saved under index i).
  const std::vector<Tensor>& parameters() const { return params_; }
  /// The learning rate the next step() uses.
  double lr() const { return lr_; }
  /// Sets the learning rate (schedules call this); throws unless lr is a finite number >= 0.
  void set_lr(double lr);
  /// Number of step() calls so far (restored by load_state).
  int64_t steps() const { return steps_; }

  /// Clears every parameter's gradient (PyTorch's zero_grad(set_to_none=True)): the next backward
  /// writes fresh gradients, and a parameter that gets none is skipped by step().
  void zero_grad();
  /// Updates every parameter that has a gradient, in place (not recorded by autograd).
  virtual void step() = 0;

  /// The optimizer's state for a checkpoint. Here: scalars "lr" and "step"; optimizers add theirs.
  virtual OptimizerState state() const;
  /// Restores a state() saved by an optimizer of the same kind over parameters of the same shapes.
  /// Checks everything first; on any mismatch it throws a normlab::Error saying what was expected and
  /// what was given, and leaves the optimizer unchanged.
  virtual void load_state(const OptimizerState& state);

 protected:
  /// Throws unless state.scalars has exactly the keys `expected` (naming the missing and unexpected ones).
  void check_scalar_names(const OptimizerState& state, const std::vector<std::string>& expected) const;
  /// Reads scalar "step" of a checked state: throws unless it is a whole number >= 0.
  int64_t read_step(const OptimizerState& state) const;
  /// Throws unless lr is a finite number >= 0 (`where` names the caller in the message).
  void check_lr(double lr, const std::string& where) const;
  /// Reads scalar `name` of a checked state, a flag: throws unless it is 0 or 1.
  bool read_flag(const OptimizerState& state, const std::string& name) const;
  /// Throws unless every gradient that is set has its parameter's shape and dtype (a step checks
  /// them all before it changes anything).
  void check_grads() const;

  /// The names of per-parameter state: "<kind>.<i>", e.g. "momentum_buffer.0", for parameter i.
  static std::string indexed(const std::string& kind, size_t i);
  /// Splits "<kind>.<i>" into kind and i (a parameter index: digits, no leading zeros); i = -1 if the
  /// name is not of that form.
  static std::pair<std::string, int64_t> split_indexed(const std::string& name);
  /// For load_state: throws unless index i, read from the state entry `name`, is below the
  /// parameter count.
  void check_param_index(const std::string& name, int64_t i) const;
  /// For load_state: throws unless tensor t of the state entry `name` is defined and has the shape
  /// and dtype of parameter i.
  void check_like_param(const std::string& name, size_t i, const Tensor& t) const;

  std::string name_;  ///< the optimizer's name, for messages ("SGD")
  std::vector<Tensor> params_;  ///< the parameters, shared with the model
  double lr_;  ///< the learning rate
  int64_t steps_ = 0;  ///< step() calls so far
};

}  // namespace normlab::optim
