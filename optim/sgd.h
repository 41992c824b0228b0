// SGD: stochastic gradient descent with momentum, dampening, Nesterov momentum, weight decay and
// maximize, with PyTorch's exact update rule (torch.optim.SGD).
#pragma once
#include <limits>
#include <vector>

#include "optim/optimizer.h"

namespace normlab::optim {

/// SGD's hyper-parameters, PyTorch's names and defaults: SGDOptions{.lr = 0.1, .momentum = 0.9}.
struct SGDOptions {
  double lr = std::numeric_limits<double>::quiet_NaN();  ///< required: >= 0
  double momentum = 0;      ///< in [0, 1); 0 keeps no momentum buffers
  double dampening = 0;     ///< the gradient enters the buffer scaled by 1 - dampening
  double weight_decay = 0;  ///< >= 0; adds weight_decay * theta to the gradient (L2 penalty)
  bool nesterov = false;    ///< needs momentum > 0 and dampening == 0
  bool maximize = false;    ///< ascend instead of descend
};

/// Stochastic gradient descent with momentum, PyTorch's torch.optim.SGD.
class SGD : public Optimizer {
 public:
  /// SGD over params (shared handles, updated in place). Throws a normlab::Error for lr < 0,
  /// momentum outside [0, 1), weight_decay < 0, non-finite values, or nesterov without momentum or
  /// with dampening; and for a bad parameter list (see Optimizer).
  SGD(std::vector<Tensor> params, SGDOptions options);

  /// The hyper-parameters now (lr as set_lr or a schedule left it).
  SGDOptions options() const;
  /// One step on every parameter that has a gradient. Per element, in the parameter's dtype:
  ///   g = maximize ? -grad : grad;  if weight_decay != 0: g = g + weight_decay * theta
  ///   if momentum != 0: buf = (first step of this parameter) ? g : momentum * buf + (1 - dampening) * g
  ///                     g = nesterov ? g + momentum * buf : buf
  ///   theta = theta - lr * g
  /// Parameters without a gradient are skipped, their buffers untouched. One fused pass per parameter.
  void step() override;

  /// The momentum buffer of parameter i: undefined when momentum is 0 or before the parameter's
  /// first step with a gradient.
  const Tensor& momentum_buffer(size_t i) const { return buffers_.at(i); }

  /// Tensors "momentum_buffer.<i>" (only the buffers that exist; copies); scalars "lr", "momentum",
  /// "dampening", "weight_decay", "nesterov", "maximize" (0 or 1) and "step".
  OptimizerState state() const override;
  /// Restores the hyper-parameters, the step count and the momentum buffers from state(). Checks the
  /// scalar names and values, the buffer names (index below the parameter count, no repeats, none
  /// when momentum is 0), shapes and dtypes first; on a mismatch throws and changes nothing.
  void load_state(const OptimizerState& state) override;

  /// Throws unless the options are valid (`where` names the caller in the message): what the
  /// constructor checks, for a caller that validates its settings before it builds anything.
  static void check_options(const SGDOptions& o, const std::string& where);

 private:
  SGDOptions opts_;              // opts_.lr is unused: the base class owns the lr
  std::vector<Tensor> buffers_;  // one per parameter, undefined until created
};

}  // namespace normlab::optim
