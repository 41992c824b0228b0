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
#include "experiments/config/train_config.h"
#include "experiments/records/run_result.h"
#include "experiments/run/observer.h"
#include "optim/lr_scheduler.h"
#include "optim/sgd.h"

namespace normlab::experiments {

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

// The run's optimizer (config.optimizer) over params, at its peak lr.
std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<autograd::Tensor> params);
// The optimizer and its settings in words, e.g. "SGD lr 0.05, momentum 0.9" or "AdamW lr 0.001,
// betas (0.9, 0.999), eps 1e-08, weight decay 0.01" (and ", gradient norm clipped to 1" when clipped).
// Without the lr when with_lr is false (a sweep states its own rule).
std::string optimizer_text(const TrainConfig& c, bool with_lr = true);

}  // namespace normlab::experiments
