// Module: the base of every layer, with named parameters, buffers and child modules, train/eval,
// and state_dict / load_state_dict using PyTorch's dotted names ("0.weight", "1.running_mean").
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.h"

namespace normlab::nn {

using autograd::DType;
using autograd::Generator;
using autograd::Shape;
using autograd::Tensor;

using autograd::NamedTensors;

/// The base of every layer: parameters, buffers and children by name, train/eval, state_dict
/// (PyTorch's nn.Module).
class Module {
 public:
  virtual ~Module() = default;  ///< Virtual: modules are held as std::shared_ptr<Module>.
  Module() = default;  ///< A module with no parameters, buffers or children, in training mode.
  Module(const Module&) = delete;  ///< Not copyable (parameters are shared handles; a copy would alias them).
  Module& operator=(const Module&) = delete;  ///< Not copyable.

  /// The forward pass on one input.
  virtual Tensor forward(const Tensor& x) = 0;
  /// forward(x), then every forward hook in registration order; containers call their children
  /// this way, so a hook sees every call.
  Tensor operator()(const Tensor& x);

  /// Called after each forward with (module, input, output), as PyTorch's register_forward_hook:
  /// how the experiments record activation statistics without re-running the model layer by layer.
  using ForwardHook = std::function<void(const Module& m, const Tensor& input, const Tensor& output)>;
  /// Adds a forward hook; returns its id for remove_forward_hook.
  int64_t register_forward_hook(ForwardHook hook);
  /// Removes the forward hook with this id (an unknown id is ignored).
  void remove_forward_hook(int64_t id);
  /// Whether a forward hook is registered: a fused forward that would not call this module's
  /// operator() (TransformerBlock's) then calls it, so that the hook sees the call.
  bool has_forward_hooks() const { return !forward_hooks_.empty(); }
  /// PyTorch-like description, e.g. "Linear(in_features=4, out_features=2, bias=True)".
  virtual std::string repr() const = 0;

  /// Training mode (BatchNorm uses batch statistics, Dropout drops) for this module and its children.
  void train(bool on = true);
  /// Evaluation mode: train(false).
  void eval() { train(false); }
  bool is_training() const { return training_; }  ///< Whether the module is in training mode.

  /// Parameters of this module and its children (recursively), in registration order. A tensor
  /// reachable twice (a module shared by two parents) is listed once, under its first name, as
  /// PyTorch does, so an optimizer updates it once.
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;  ///< Parameters with their dotted names, in parameters() order.
  NamedTensors named_buffers() const;  ///< Buffers with their dotted names (running statistics and the like).
  /// Total number of parameter elements.
  int64_t num_parameters() const;
  /// Clears every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  /// Converts every parameter, buffer and gradient of this module and its children to dtype, in
  /// place: handles held elsewhere (an optimizer's parameter list, a layer's weight) see the new
  /// dtype. PyTorch's model.double() / model.float(). Returns *this.
  Module& to(DType dtype);

  /// Parameters and buffers by dotted name, in PyTorch's order: a module's own parameters, then its
  /// own buffers, then each child's entries prefixed with the child's name. The tensors share data
  /// with the module.
  NamedTensors state_dict() const;
  /// Copies every tensor of `state` into the module. Checks first that the names are exactly the
  /// module's (none missing, none unexpected) and that every shape matches; on any mismatch it throws
  /// a normlab::Error naming the tensors and leaves the module unchanged.
  void load_state_dict(const NamedTensors& state);

  /// The direct children, by name.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
  /// Module tree printed as PyTorch prints it.
  std::string str() const;

 protected:
  /// Registers a parameter (marked requires_grad) under name; returns the stored handle.
  Tensor register_parameter(const std::string& name, Tensor t);
  /// Registers a buffer (state that is saved but not trained, e.g. running_mean).
  Tensor register_buffer(const std::string& name, Tensor t);
  /// Registers a child module under name.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }
  /// Replaces the tensor of a registered buffer (for buffers a module reassigns).
  void set_buffer(const std::string& name, Tensor t);
  /// Called by train(): lets a module react to a mode change (default: nothing).
  virtual void on_train(bool) {}

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  void collect(const std::string& prefix, NamedTensors* params, NamedTensors* buffers) const;
  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<int64_t, ForwardHook>> forward_hooks_;
  int64_t next_hook_id_ = 0;
  bool training_ = true;
};

}  // namespace normlab::nn
