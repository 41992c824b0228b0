// What a run is: the model it trains (model_spec.h), the optimizer and schedule settings, the
// batch size, epochs, evaluations and seed (TrainConfig), and the data it trains on (Splits).
#pragma once
#include <cstdint>
#include <string>

#include "data/csv.h"
#include "data/split.h"
#include "experiments/config/model_spec.h"

namespace normlab::experiments {

// Training, validation (may be empty) and test sets.
using Splits = data::Splits;

struct TrainConfig {
  ModelSpec model;                  // inputs/outputs are taken from the data
  data::Task task = data::Task::Classification;  // or Regression (a CSV's numeric label; MSE loss, R^2): as the data
  int64_t epochs = 5;
  int64_t batch_size = 128;
  std::string optimizer = "sgd";  // a registered optimizer (optimizers.h): sgd | adam | adamw
  double lr = 0.05;               // peak learning rate (after warmup)
  double momentum = 0.9;          // sgd
  double weight_decay = 0;        // sgd and adam: L2 added to the gradient; adamw: decoupled
  bool nesterov = false;          // sgd
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw
  double clip_grad_norm = 0;      // clip the total gradient norm (L2, all parameters) to this before
                                  // every optimizer step, as torch.nn.utils.clip_grad_norm_ (0: off)
  int64_t warmup_steps = 0;       // linear warmup: lr (t + 1) / warmup_steps at step t < warmup_steps
  std::string schedule = "cosine";  // after warmup, a registered schedule: none | cosine (to 0 at the end) | step
  int64_t step_every = 0;         // schedule "step": multiply by step_gamma every this many steps
  double step_gamma = 0.1;
  uint64_t seed = 0;
  int64_t loss_every = 1;         // record the training loss every this many steps
  int64_t stats_every = 0;        // activation stats and gradient norms every this many steps (0: off)
  // The landscape probes (run/landscape.h): internal covariate shift per layer and the loss and
  // gradient along -g at lr x {0.25, 0.5, 1, 2, 4} every probe_every steps (0: off); the Hessian's
  // top eigenvalue (power iteration: at most curvature_iters products, relative change below
  // curvature_tol) and trace (Hutchinson, trace_samples draws) of the loss of the first
  // curvature_samples training samples, before the first step, at a quarter, a half and after the
  // last step (0: off).
  int64_t probe_every = 0;
  int64_t curvature_samples = 0;
  int64_t curvature_iters = 100;
  double curvature_tol = 1e-3;
  int64_t trace_samples = 100;
  bool bn_three_ways = false;     // BatchNorm: also evaluate with precise stats and test-batch stats
  int64_t precise_bn_samples = 10000;
  int64_t eval_batch = 1000;
  int64_t eval_last = 0;          // evaluate (validation, test) only after the last N epochs (0: every epoch)
  int64_t eval_every = 0;         // also evaluate (validation, test) after every N steps (0: after epochs only)
  int64_t early_stopping = 0;     // stop after this many epochs without a lower validation loss and end
                                  // with the best epoch's weights (0: off; needs a validation set)
  bool distributed = false;       // data-parallel over the ranks of an mpirun job (ddp.h); batch_size is the
                                  // global batch, each rank trains on batch_size / ranks of it
  int ranks = 0;                  // distributed: how many ranks it trains over, as recorded and checked
                                  // (0: those of the job, dist::world_size(); sweep --distributed sets it per run)
  std::string init_from;          // start from these weights (a safetensors file of the model's state_dict;
                                  // "": the seeded initialization)
};

// "classification" or "regression", as records and checkpoints write a task.
std::string task_name(data::Task task);

}  // namespace normlab::experiments
