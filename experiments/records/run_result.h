// What a run of any family gives: its records (the loss at each step, the evaluations, activation
// statistics and gradient norms; a language model's validation windows and sample) and how it
// ended (RunResult), as the run loop fills them and the records, the reports and the studies read them.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "experiments/config/lm_config.h"
#include "experiments/config/train_config.h"
#include "nn/sequential.h"

namespace normlab::experiments {

// One training step: the loss of its batch before its update. step counts the steps before it (0
// for the first); a language model's run is one epoch of its steps (epoch 1) and records the total
// gradient norm of each step (before clipping; NaN when not measured: the classifiers).
struct StepRecord {
  int64_t step, epoch;
  double lr, loss;
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
};

// The *_acc fields hold accuracy, or R^2 for regression (and the losses are mean squared errors of
// the standardized target).
struct EpochRecord {
  int64_t epoch, step;
  double train_loss, train_acc;  // running mean over the epoch's batches
  double val_loss, val_acc, test_loss, test_acc;
  // Norms with batch statistics only (bn_three_ways), NaN otherwise: test accuracy with precise
  // population statistics, and with the statistics of test batches of the training batch size.
  double test_acc_precise = std::numeric_limits<double>::quiet_NaN();
  double test_acc_batch = std::numeric_limits<double>::quiet_NaN();
};

// An evaluation after `step` steps, in epoch `epoch`. A classifier's, between epochs
// (TrainConfig::eval_every): validation (NaN without a validation set) and test loss and accuracy.
// A language model's, on its validation split: the first `windows` non-overlapping windows (every
// one when `all`: the final evaluation), in batches of the run's training batch size; val_loss in
// nats per character in eval mode (BatchNorm: running statistics), val_loss_train_mode BatchNorm's
// in train mode (each batch's own statistics; else NaN); no accuracy, no test split.
struct EvalRecord {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  int64_t step = 0, epoch = 0;
  double val_loss = kNone, val_acc = kNone, test_loss = kNone, test_acc = kNone;
  int64_t windows = 0;
  bool all = false;
  double val_loss_train_mode = kNone;
};

// Mean and standard deviation of one hidden layer's activations at a step: after the Linear
// ("pre"), after the norm ("post", = pre without a norm), after the activation ("act").
struct ActivationStat {
  int64_t step;
  int layer;
  std::string where;
  double mean, std;
};

struct GradNorm {
  int64_t step;
  std::string param;
  double norm;
};

// A sequence model (ArchEntry::time_steps): how much gradient reaches the input of time step t
// (from 1) at a training step: sqrt(B) ||dL/dX_t||_F, with L the batch's mean loss and X_t (B, I)
// the batch's inputs at step t. That is the root mean square over the batch of ||B dL/dx_{i,t}||,
// for a model without batch statistics each sample's own loss gradient: comparable across batch sizes.
struct InputGradNorm {
  int64_t step, time_step;
  double norm;
};

// The internal covariate shift of one layer at a probed step (run/landscape.h's LayerShift): the
// layer's index in forward order and its weight's name.
struct ShiftRecord {
  int64_t step;
  int layer;
  std::string name;
  double ics, relative, cosine;
};

// The landscape along -g at a probed step: one row per eta (eta = lr x multiplier), and the step's
// summaries repeated on each (max - min of the losses, the largest gradient change, beta).
struct LandscapeRecord {
  int64_t step;
  double multiplier, eta, loss, grad_change;
  double grad_norm, loss_variation, grad_predictiveness, beta_smoothness;
};

// The curvature at one of the four points ("init", "quarter", "half", "end"; step: the steps done).
struct CurvatureRecord {
  int64_t step;
  std::string point;
  double eigenvalue;
  int64_t iterations;
  bool converged;
  double trace, trace_se;
  int64_t trace_samples;
};

struct RunResult {
  TrainConfig config;
  std::vector<StepRecord> steps;
  std::vector<EpochRecord> epochs;
  std::vector<EvalRecord> evals;  // every config.eval_every steps (empty when 0)
  std::vector<ActivationStat> activations;
  std::vector<GradNorm> grad_norms;
  std::vector<InputGradNorm> input_grads;  // sequence models, every config.stats_every steps
  std::vector<ShiftRecord> shifts;         // every config.probe_every steps
  std::vector<LandscapeRecord> landscape;  // every config.probe_every steps
  std::vector<CurvatureRecord> curvature;  // with config.curvature_samples
  bool diverged = false;
  int64_t diverged_step = -1;
  bool interrupted = false;  // Ctrl-C stopped the run before its last step (interrupt.h)
  // Early stopping (config.early_stopping): the epoch whose weights the run ends with (lowest
  // validation loss; 0: off), and whether the run stopped before its last epoch.
  int64_t best_epoch = 0;
  bool stopped_early = false;
  int64_t total_steps = 0;
  int64_t train_samples = 0;  // size of the training split
  double seconds = 0;  // wall time of the whole run, split below (the rest: setup and bookkeeping)
  double cpu_seconds = 0;        // processor time of the process during the run (all threads)
  double step_seconds = 0;       // training steps: forward, loss, backward, optimizer
  double data_seconds = 0;       // copying the training batches out of the data set
  double stats_seconds = 0;      // activation statistics, gradient norms and the landscape probes
  double eval_seconds = 0;       // validation and test evaluation
  double bn_eval_seconds = 0;    // BatchNorm: precise statistics and test-batch statistics
  std::shared_ptr<nn::Sequential> model;
  // A language model's run: the norm variant it stands for ("layer-post"), its window length and
  // parameter count, and the sample a study generates from its model (UTF-8; empty without one).
  // config holds its optimizer settings, batch size and seed; total_steps the steps planned; evals
  // its periodic evaluations, then the final one over every window.
  std::string variant;
  int64_t block_size = 0, parameters = 0;
  std::string sample_prompt, sample;
};

// The record of the epoch whose weights the run ends with: the best epoch under early stopping,
// else the last one. The run must have an epoch.
const EpochRecord& final_epoch(const RunResult& r);

// A language model's final evaluation over every window (nullptr: diverged, interrupted or no
// validation split).
const EvalRecord* final_eval(const RunResult& r);

// A language model's run before its first step: s's settings (config, variant, block size, steps).
RunResult lm_result_of(const LmRunSpec& s);

}  // namespace normlab::experiments
