// One training run: a model from the arch registry trained with an optimizer and a learning-rate
// schedule from their registries (optimizers.h; linear warmup first), as a loop over one training step, watched by observers (observer.h)
// that record the loss, activation statistics, gradient norms and the per-epoch evaluation.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "data/csv.h"
#include "data/dataset.h"
#include "data/split.h"
#include "experiments/evaluate.h"
#include "experiments/model.h"
#include "optim/lr_scheduler.h"
#include "optim/sgd.h"

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

// Throws normlab::Error for settings that cannot train (batch 0, a norm with batch statistics at
// batch size 1 or on a single training sample, non-positive epochs, a bad schedule, ...).
void validate(const TrainConfig& c, const Splits& s);

// A run's settings that validate() accepted against the data it trains on: what train_run trains.
// Only check_run makes one, so a command checks each of its runs once, when it plans them, and
// nothing checks them again.
class CheckedRun {
 public:
  const TrainConfig& config() const { return config_; }

 private:
  explicit CheckedRun(TrainConfig c) : config_(std::move(c)) {}
  friend CheckedRun check_run(TrainConfig config, const Splits& data);
  TrainConfig config_;
};

// Validates the settings against the data (validate) and returns them checked.
CheckedRun check_run(TrainConfig config, const Splits& data);

struct StepRecord {
  int64_t step, epoch;
  double lr, loss;
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

// An evaluation between epochs (TrainConfig::eval_every): validation (NaN without a validation
// set) and test loss and accuracy after `step` steps, in epoch `epoch`.
struct EvalRecord {
  int64_t step, epoch;
  double val_loss, val_acc, test_loss, test_acc;
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

struct RunResult {
  TrainConfig config;
  std::vector<StepRecord> steps;
  std::vector<EpochRecord> epochs;
  std::vector<EvalRecord> evals;  // every config.eval_every steps (empty when 0)
  std::vector<ActivationStat> activations;
  std::vector<GradNorm> grad_norms;
  std::vector<InputGradNorm> input_grads;  // sequence models, every config.stats_every steps
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
  double stats_seconds = 0;      // activation statistics and gradient norms
  double eval_seconds = 0;       // validation and test evaluation
  double bn_eval_seconds = 0;    // BatchNorm: precise statistics and test-batch statistics
  std::shared_ptr<nn::Sequential> model;
};

// The record of the epoch whose weights the run ends with: the best epoch under early stopping,
// else the last one. The run must have an epoch.
const EpochRecord& final_epoch(const RunResult& r);

// Called after every training step with (steps done in this run, steps in this run).
using StepCallback = std::function<void(int64_t, int64_t)>;

// Called after every epoch, as soon as it is evaluated, with its record.
using EpochCallback = std::function<void(const EpochRecord&)>;

// Where a run is: the epoch in progress (from 1), the batches of it done, the steps done, and the
// epoch's running training metrics so far.
struct RunPosition {
  int64_t epoch = 1, batch = 0, step = 0;
  double loss_sum = 0;  // sum over the epoch's batches done of batch loss x batch size
  ScoreMeter score;     // their accuracy (or R^2)
};

// Checkpoints of a run (normlab train --checkpoint-every and --resume; checkpointing.h).
struct RunControl {
  std::filesystem::path checkpoint_dir;  // where checkpoints are written ("": nowhere)
  int64_t checkpoint_every = 0;          // after every N epochs (0: never); also when Ctrl-C stops the run
  std::filesystem::path resume;          // a checkpoint folder to continue from ("": start afresh)
};

// Trains one model as configured. A NaN or Inf loss stops the run, marked diverged at that step;
// Ctrl-C (interrupt.h) stops it after the current step, marked interrupted. With control.resume,
// the run continues from that checkpoint (made with the same config and data: else a
// normlab::Error says what differs) and ends with the same bits as if it had never stopped.
RunResult train_run(const CheckedRun& run, const Splits& data, const StepCallback& on_step = {},
                    const EpochCallback& on_epoch = {}, const RunControl& control = {});
// The same after check_run(config, data): for programs that train one configuration directly.
RunResult train_run(const TrainConfig& config, const Splits& data, const StepCallback& on_step = {},
                    const EpochCallback& on_epoch = {}, const RunControl& control = {});

// Steps one run of this configuration takes (on a training set of train_samples samples).
int64_t steps_per_run(const TrainConfig& config, const Splits& data);
int64_t steps_per_run(const TrainConfig& config, int64_t train_samples);

// Whether the epochs drop their last partial batch. Training sets of at least 4 batches do (every
// step at the batch size the study is about), and so does data-parallel training (every rank's
// slice the same size); smaller ones keep it, as PyTorch's DataLoader does
// by default, so that a small file trains at the default batch size (a batch larger than the set
// is one batch of all of it); except a last batch of a single sample under a norm with batch
// statistics, which cannot be normalized (PyTorch's error): it is dropped.
bool drops_last_batch(const TrainConfig& config, int64_t train_samples);
// The sentence a report adds when drops_last_batch drops a batch that a small set would keep ("":
// nothing to say).
std::string last_batch_note(const TrainConfig& config, int64_t train_samples);

// The run's learning-rate schedule over `total` steps, from optim: Warmup(warmup_steps), then
// CosineAnnealingLR(total - warmup_steps), StepLR(step_every, step_gamma) or Constant().
optim::Schedule schedule_of(const TrainConfig& c, int64_t total);

// The SGD options of a run (its peak lr; the schedule scales it).
optim::SGDOptions sgd_options(const TrainConfig& c);
// The run's optimizer (config.optimizer) over params, at its peak lr.
std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<autograd::Tensor> params);
// The optimizer and its settings in words, e.g. "SGD lr 0.05, momentum 0.9" or "AdamW lr 0.001,
// betas (0.9, 0.999), eps 1e-08, weight decay 0.01" (and ", gradient norm clipped to 1" when clipped).
// Without the lr when with_lr is false (a sweep states its own rule).
std::string optimizer_text(const TrainConfig& c, bool with_lr = true);

}  // namespace normlab::experiments
