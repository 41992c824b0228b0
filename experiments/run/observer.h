// Observers of a training run: hooks that the training loop calls at fixed points of every step
// and epoch. Recording the loss, activation statistics (through the modules' forward hooks),
// gradient norms and the per-epoch evaluation are observers; so is anything a caller adds.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/loader.h"
#include "experiments/models/model.h"
#include "experiments/records/run_result.h"

namespace normlab::experiments {

// Called after every training step with (steps done in this run, steps in this run).
using StepCallback = std::function<void(int64_t, int64_t)>;

// Called after every epoch, as soon as it is evaluated, with its record.
using EpochCallback = std::function<void(const EpochRecord&)>;

// What an observer sees of the run in progress.
struct RunState {
  const TrainConfig& config;
  const Splits& data;
  Model& model;
  RunResult& result;
  int64_t total = 0;  // steps in the run
  int64_t step = 0;   // index of the current step (steps done before it)
  int64_t epoch = 0;  // the current epoch, from 1
  // Set by an observer in step_begin: the step's input is a leaf that requires its gradient, kept
  // in `input` (after the backward pass its grad() is dL/dinput).
  bool input_grad = false;
  autograd::Tensor input;
};

// One finished training step: its lr, its loss (not finite: the run stops here, before the
// backward pass), its batch and logits.
struct StepView {
  double lr, loss;
  const data::Batch& batch;
  const autograd::Tensor& logits;
};

class Observer {
 public:
  virtual ~Observer() = default;
  // Before the step's forward pass.
  virtual void step_begin(RunState&) {}
  // After the backward pass, before the optimizer steps: the gradients are there.
  virtual void after_backward(RunState&) {}
  // After the optimizer and the schedule stepped (or after a non-finite loss, before the run stops).
  virtual void step_end(RunState&, const StepView&) {}
  // After the epoch's last step, in observer order (the evaluation fills the record first).
  virtual void epoch_end(RunState&, EpochRecord&) {}
};

using Observers = std::vector<std::unique_ptr<Observer>>;

// The training loss every config.loss_every steps, and the loss of a step that diverged.
std::unique_ptr<Observer> loss_log();
// Mean and std of every probe's output (model.probes) every config.stats_every steps, recorded
// by forward hooks while the step runs; the hooks are removed with the observer.
std::unique_ptr<Observer> activation_stats(RunState& st);
// The L2 norm of the gradient of every Linear weight (model.weights) every config.stats_every steps.
std::unique_ptr<Observer> grad_norms();
// A sequence model's input gradient per time step (InputGradNorm) every config.stats_every steps;
// nothing for a model of an arch without time steps.
std::unique_ptr<Observer> input_grad_norms();
// The landscape probes (landscape.h) every config.probe_every steps: each layer's internal
// covariate shift and the loss and gradient along -g at lr x {0.25, 0.5, 1, 2, 4}, on the step's
// batch from the weights and buffers the step started from; and with config.curvature_samples the
// curvature of the loss of the first that many training samples before the first step, before
// steps total/4 and total/2, and after the last. Each puts the model back bit for bit, so that a
// run trains exactly as it would without them. Must come after activation_stats (whose hooks must
// be off while the probes' forward passes run).
std::unique_ptr<Observer> landscape_probes();
// Validation and test loss and accuracy after each epoch (only the last config.eval_last epochs
// when set) and every config.eval_every steps (RunResult::evals), marking the run diverged if the test loss is not finite; and for a norm with batch
// statistics under config.bn_three_ways, the precise and test-batch accuracies at the same epochs
// as the test evaluation.
std::unique_ptr<Observer> evaluation();
// Calls on_step(steps done, total) after every step and on_epoch(record) after every epoch.
std::unique_ptr<Observer> callbacks(StepCallback on_step, EpochCallback on_epoch);

// Seconds since t.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace normlab::experiments
