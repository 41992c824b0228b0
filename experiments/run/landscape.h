// Why a norm helps, measured at one training step: the internal covariate shift of each layer
// (Santurkar et al. 2018, Definition 2.1), the loss and its gradient along the gradient direction
// (their "landscape" measures), and the curvature of a batch loss (the Hessian's top eigenvalue
// and trace, as PyHessian computes them). Each measure evaluates the model at other parameter
// values and puts the model back exactly as it found it (parameters and buffers, bit for bit).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <optional>

#include "autograd/curvature.h"
#include "autograd/tensor.h"
#include "experiments/config/train_config.h"
#include "experiments/models/built_model.h"
#include "experiments/records/run_result.h"
#include "nn/module.h"

namespace normlab::experiments {

// A "layer" of the measures: a weight layer (Linear, Conv2d, one layer of an LSTM) together with
// the norm after it, as its parameters (weight, bias, the norm's affine parameters).
struct ParamLayer {
  std::string name;                     // its weight's state_dict name, "0.weight"
  std::vector<autograd::Tensor> params;  // in the module's order
};

// The model's parameters in layers, in forward order: a parameter starts a new layer when it is
// one of model.weights (an LSTM's input-to-hidden and hidden-to-hidden weights of one layer k, the
// names ending in _l<k>, share one); every other parameter belongs to the layer before it.
std::vector<ParamLayer> param_layers(const Model& model);

// The values of a module's parameters and buffers (copies), and putting them back in place (the
// handles an optimizer holds see the restored values).
class ModuleState {
 public:
  explicit ModuleState(const nn::Module& m);
  void restore() const;                                     // every parameter and buffer
  void restore_buffers() const;                             // the buffers only
  // The saved value of one of the module's tensors (found by its data); throws for another tensor.
  const autograd::Tensor& value_of(const autograd::Tensor& t) const;

 private:
  std::vector<autograd::Tensor> handles_, values_;  // state_dict order
  std::vector<bool> is_buffer_;
};

// The batch loss at the model's current parameter values: a fresh forward pass on a fixed batch,
// in the mode the model is in (training: BatchNorm with the batch's statistics).
using BatchLoss = std::function<autograd::Tensor()>;

// ICS of one layer: G the gradient of the batch loss with respect to its parameters at the step's
// weights w_t, G' the same after layers 1..i-1 (only those) took the step's update.
struct LayerShift {
  std::string layer;
  double ics = 0;       // ||G - G'||_2 over the layer's parameters
  double relative = 0;  // ||G - G'|| / ||G|| (NaN when G = 0)
  double cosine = 0;    // <G, G'> / (||G|| ||G'||) (NaN when either is 0)
};

// The loss and gradient at w - eta g for one eta.
struct LandscapePoint {
  double eta = 0;
  double loss = 0;         // L(w - eta g)
  double grad_change = 0;  // ||g - g(w - eta g)||_2 over every parameter
};

// The landscape along the gradient at one step, and its three summaries.
struct Landscape {
  std::vector<LandscapePoint> points;  // in the order of the etas
  double grad_norm = 0;                // ||g||
  double loss_variation = 0;           // max - min of L(w - eta g) over the etas
  double grad_predictiveness = 0;      // max over eta of ||g - g(w - eta g)||
  double beta_smoothness = 0;          // max over eta of ||g - g(w - eta g)|| / (eta ||g||)
};

// What the step measures see: the model, its layers, the batch loss on the step's batch.
struct StepProbe {
  nn::Module& module;
  const std::vector<ParamLayer>& layers;
  BatchLoss loss;
};

// Both step measures at step t, from the state before the step (`before`: w_t and the buffers the
// step's forward pass started from) and the model as it is after the step (w_{t+1}). Every
// evaluation starts from `before`'s buffers (BatchNorm's running statistics, a noisy norm's step),
// so it sees the batch exactly as the step did. The model is left as it was on entry.
struct StepMeasures {
  std::vector<LayerShift> shifts;  // one per layer, in forward order (the first is 0: no layer precedes it)
  Landscape landscape;
};
// etas: the step sizes along -g (the lr times {0.25, 0.5, 1, 2, 4} in the study).
StepMeasures measure_step(const StepProbe& probe, const ModuleState& before, const std::vector<double>& etas);

// The curvature of a batch loss at the current parameters: the eigenvalue of largest magnitude
// (power iteration on exact Hessian-vector products; its sign kept) and Hutchinson's trace estimate.
// The model is left as it was on entry (the loss's forward pass may move running statistics).
struct Curvature {
  autograd::EigenResult top;
  autograd::TraceResult trace;
};
Curvature measure_curvature(nn::Module& module, const std::vector<autograd::Tensor>& params, const BatchLoss& loss,
                            const autograd::PowerIterationOptions& power, const autograd::TraceOptions& trace);

// The probes of one run as its training loop drives them, the same for every family: the step
// measures every config.probe_every steps (on the step's batch, from the state the step started
// from) and, with config.curvature_samples, the curvature of a fixed probe batch's loss before the
// first step, before step total/4 and total/2, and after the last, all recorded in a RunResult
// (shifts, landscape, curvature; their time in stats_seconds). Diverged steps are not probed.
class RunProbes {
 public:
  // layers: the model's ICS layers (param_layers, or a family's own); curvature_loss: the probe
  // batch's loss at the current parameters (used only with curvature_samples > 0).
  RunProbes(nn::Module& net, std::vector<ParamLayer> layers, const TrainConfig& c, int64_t total_steps,
            BatchLoss curvature_loss);
  // Before step `step` (from 0) runs its forward pass: the curvature points and the state to probe.
  void step_begin(int64_t step, RunResult& r);
  // After its update (the model at w_{t+1}): lr the step's learning rate, loss its loss (a
  // non-finite one is not probed), batch_loss the loss of the step's batch at the current parameters.
  void step_end(int64_t step, double lr, double loss, const BatchLoss& batch_loss, RunResult& r);

 private:
  void curvature(int64_t step, const char* point, RunResult& r);

  nn::Module& net_;
  std::vector<ParamLayer> layers_;
  const TrainConfig& c_;
  int64_t total_;
  BatchLoss curvature_loss_;
  std::optional<ModuleState> before_;
};

}  // namespace normlab::experiments
