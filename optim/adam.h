// Adam and AdamW: adaptive moment estimation with L2 (Adam) or decoupled (AdamW) weight decay,
// AMSGrad and maximize, with PyTorch 1.13's exact single-tensor update rule (torch.optim.Adam and
// torch.optim.AdamW with foreach=False).
#pragma once
#include <array>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace normlab::optim {

/// Adam's hyper-parameters, PyTorch's names and defaults: AdamOptions{.lr = 1e-3, .betas = {0.9, 0.99}}.
struct AdamOptions {
  double lr = 1e-3;                            ///< >= 0
  std::array<double, 2> betas = {0.9, 0.999};  ///< each in [0, 1): the decay rates of exp_avg and exp_avg_sq
  double eps = 1e-8;                           ///< >= 0; added to the denominator
  double weight_decay = 0;                     ///< >= 0; adds weight_decay * theta to the gradient (L2 penalty)
  bool amsgrad = false;                        ///< divide by the largest exp_avg_sq so far (AMSGrad)
  bool maximize = false;                       ///< ascend instead of descend
};

/// AdamW's hyper-parameters: Adam's, but weight decay is decoupled from the gradient and on by default.
struct AdamWOptions {
  double lr = 1e-3;  ///< >= 0
  std::array<double, 2> betas = {0.9, 0.999};  ///< each in [0, 1)
  double eps = 1e-8;  ///< >= 0; added to the denominator
  double weight_decay = 1e-2;  ///< >= 0; theta *= 1 - lr * weight_decay before the Adam step
  bool amsgrad = false;  ///< AMSGrad (see AdamOptions)
  bool maximize = false;  ///< ascend instead of descend
};

/// Adam (Kingma & Ba), PyTorch's torch.optim.Adam.
class Adam : public Optimizer {
 public:
  /// Adam over params (shared handles, updated in place). Throws a normlab::Error for lr < 0, a beta
  /// outside [0, 1), eps < 0, weight_decay < 0 or non-finite values; and for a bad parameter list
  /// (see Optimizer).
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});

  /// The hyper-parameters now (lr as set_lr or a schedule left it).
  AdamOptions options() const;
  /// One step on every parameter that has a gradient. Per parameter, in double as PyTorch computes
  /// it in Python floats: step += 1 (this parameter's own count, PyTorch's state['step']),
  ///   bias_correction1 = 1 - beta1^step,  bias_correction2 = 1 - beta2^step,
  ///   step_size = lr / bias_correction1,  bias_correction2_sqrt = sqrt(bias_correction2);
  /// then per element, in the parameter's dtype:
  ///   AdamW:  theta = theta * (1 - lr * weight_decay)
  ///   g = maximize ? -grad : grad;  Adam with weight_decay != 0: g = g + weight_decay * theta
  ///   exp_avg    = exp_avg * beta1 + (1 - beta1) * g
  ///   exp_avg_sq = exp_avg_sq * beta2 + ((1 - beta2) * g) * g
  ///   amsgrad: max_exp_avg_sq = maximum(max_exp_avg_sq, exp_avg_sq)
  ///   denom = sqrt(amsgrad ? max_exp_avg_sq : exp_avg_sq) / bias_correction2_sqrt + eps
  ///   theta = theta + (-step_size * exp_avg) / denom
  /// The moments start at zero on a parameter's first step with a gradient. Parameters without a
  /// gradient are skipped: their moments and step count are untouched. One fused pass per parameter
  /// (optim/kernels/adam.h has the exact rounding).
  void step() override;

  /// Parameter i's step count (0 before its first step with a gradient; PyTorch keeps it in a float32
  /// tensor, the same count up to 2^24 steps) and moments (undefined before that step;
  /// max_exp_avg_sq only with amsgrad).
  int64_t param_step(size_t i) const { return state_.at(i).step; }
  const Tensor& exp_avg(size_t i) const { return state_.at(i).exp_avg; }  ///< Parameter i's first moment.
  const Tensor& exp_avg_sq(size_t i) const { return state_.at(i).exp_avg_sq; }  ///< Parameter i's second moment.
  const Tensor& max_exp_avg_sq(size_t i) const { return state_.at(i).max_exp_avg_sq; }  ///< Parameter i's AMSGrad maximum.

  /// For each parameter that has taken a step: tensors "exp_avg.<i>", "exp_avg_sq.<i>" and, with
  /// amsgrad, "max_exp_avg_sq.<i>" (copies), and scalar "step.<i>" (its step count). Scalars "lr",
  /// "beta1", "beta2", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay" (0 for
  /// Adam, 1 for AdamW; each flag 0 or 1) and "step" (the number of step() calls).
  OptimizerState state() const override;
  /// Restores the hyper-parameters, the step counts and the moments from state() of the same kind of
  /// optimizer (an Adam state does not load into AdamW, nor the reverse). Checks the scalar names
  /// and values, the tensor names (index below the parameter count, no repeats, max_exp_avg_sq only
  /// with amsgrad), that every parameter's state is complete or absent, shapes and dtypes, and that
  /// no "step.<i>" is below 1 or above "step"; on a mismatch throws and changes nothing.
  void load_state(const OptimizerState& state) override;

  /// Throws unless the options are valid (`where` names the caller in the message): what the
  /// constructor checks, for a caller that validates its settings before it builds anything.
  static void check_options(const AdamOptions& o, const std::string& where);

 protected:
  /// Adam (decoupled false) or AdamW (decoupled true), named `name` in messages.
  Adam(std::string name, std::vector<Tensor> params, const AdamOptions& options, bool decoupled);

 private:
  struct ParamState {
    int64_t step = 0;
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  AdamOptions opts_;  // opts_.lr is unused: the base class owns the lr
  bool decoupled_;    // AdamW's weight decay
  std::vector<ParamState> state_;  // one per parameter
};

/// AdamW (Loshchilov & Hutter): Adam with the weight decay applied to the parameter directly,
/// theta *= 1 - lr * weight_decay, instead of being added to the gradient.
class AdamW : public Adam {
 public:
  /// AdamW over params; throws as Adam does.
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});

  /// The hyper-parameters now (lr as set_lr or a schedule left it).
  AdamWOptions options() const;

  /// Throws unless the options are valid (the same checks as Adam's).
  static void check_options(const AdamWOptions& o, const std::string& where);
};

}  // namespace normlab::optim
