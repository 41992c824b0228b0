// `normlab train --dataset text`: one character language model (a GPT or a CharLSTM) trained for a number of
// steps on random windows of a text's training split, with its validation loss in nats and bits
// per character, its CSV files, plot, report, manifest and self-describing checkpoint.
#pragma once
#include <cstdint>
#include <string>

#include "data/text.h"
#include "experiments/models/char_model.h"
#include "experiments/records/context.h"
#include "experiments/run/trainer.h"
#include "nn/gpt.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace normlab::experiments::studies {

// Windows of the fixed validation set that --eval-every evaluates (the first ones of the split);
// the final validation loss is over every window.
inline constexpr int64_t kLmEvalWindows = 256;

struct LmTrainConfig {
  CharModelSpec model;     // vocab_size from the corpus
  // The optimizer and schedule settings, the batch size, --eval-every and the seed (epochs unused).
  TrainConfig train;
  int64_t steps = 0;       // training steps
  double clip_grad_norm = 1.0;  // total gradient norm clipped to it (0: no clipping)
};

struct LmPlan {
  LmTrainConfig config;
  data::TextCorpus corpus;
};

// One training step's record.
struct LmStep {
  int64_t step;  // 1-based: the loss of the step's batch before its update
  double loss, lr, grad_norm;
};

// The optimizers of nanoGPT's two groups of m's parameters: [decayed (dim >= 2), not decayed
// (biases, norm weights; weight decay 0)], each c's optimizer.
std::vector<std::unique_ptr<optim::Optimizer>> lm_optimizer_groups(const TrainConfig& c, const nn::Module& m);

// Training step `step` (0-based) of m: the batch data::random_batch(train_ids, batch, block, seed,
// step) of c's settings, forward, cross-entropy, backward, clipping to c.clip_grad_norm, update with
// the lr of `sched` at that step. A non-finite loss is returned without an update.
LmStep lm_train_step(CharModel& m, const LmTrainConfig& c, const std::vector<int64_t>& train_ids,
                     std::vector<std::unique_ptr<optim::Optimizer>>& groups, const optim::Schedule& sched, int64_t step);

// Throws normlab::Error for settings that cannot train (naming the flags): steps < 1, warmup not
// below steps, a batch or window that does not fit, an optimizer's own checks.
void check_lm_plan(const LmPlan& plan);

// Trains, evaluates and writes steps.csv (step, loss, lr, grad_norm), evals.csv (step,
// val_loss, val_bits_per_char, windows; every --eval-every steps on the first kLmEvalWindows windows, and
// after the last step on every window), loss_curve.png/.svg, report.md, manifest.json and
// model.safetensors (metadata: language_model.h lm_metadata, plus steps and val_loss). Ctrl-C
// stops after the current step and writes what was done; a non-finite loss stops the run and saves
// model.diverged.safetensors.
Report run_lm_train(const LmPlan& plan, const StudyContext& ctx);

}  // namespace normlab::experiments::studies
