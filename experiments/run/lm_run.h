// One run of a character language model (a GPT or a CharLSTM): steps of the shared training step
// (step.h) on random windows of the corpus's training split, with AdamW (by default) over
// nanoGPT's two parameter groups, its evaluations on the validation split and, in a study, a
// sample. `normlab train --dataset text` and the GPT studies (compare, sweep) train with it; they
// differ in the few rules of LmRunRules.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "experiments/config/lm_config.h"
#include "experiments/models/char_model.h"
#include "experiments/models/size_limits.h"
#include "experiments/records/run_result.h"

namespace normlab::experiments {

// Where train and the studies differ.
struct LmRunRules {
  // Evaluate every this many steps on the first kLmEvalWindows windows (0: never).
  int64_t eval_every = 0;
  // Also after the last step (train: its evals.csv row), not only before it (the studies: the final
  // evaluation stands for it).
  bool eval_at_last_step = false;
  // Evaluate BatchNorm's model in training mode too (EvalRecord::val_loss_train_mode).
  bool train_mode_eval = false;
  // Ctrl-C during the last step marks the run interrupted (train), or lets it finish (the studies).
  bool interruptible_last_step = false;
  // The final evaluation over every window runs after Ctrl-C too (train), or only for a run that
  // finished (the studies); never for a run that diverged or without a validation split.
  bool final_after_interrupt = false;
};

// The studies' rules of a run: the periodic evaluations (when s.periodic) before the last step
// only, BatchNorm's also in training mode, the last step not interrupted by Ctrl-C, the final
// evaluation and the sample for a run that finished.
LmRunRules lm_study_rules(const LmRunSpec& s);

// Trains the spec's run: the model from a generator seeded with config.train.seed, its steps
// (random_batch(train split, batch, block, seed, step): the same bits on any thread count), the
// evaluations of `rules`, and the sample when spec.sample. After every step whose loss is finite,
// on_step(r) with the result so far (its last step, and an evaluation made after it). A
// non-finite loss stops the run, marked diverged. Ctrl-C (interrupt.h) stops it after the current
// step, marked interrupted. With model_out, the trained model is kept there.
RunResult train_lm_run(const LmRunSpec& spec, const LmRunRules& rules,
                         const std::function<void(const RunResult&)>& on_step = {},
                         std::shared_ptr<CharModel>* model_out = nullptr);

// window_loss (language_model.h) with m in training mode: BatchNorm normalizes each batch of
// windows with its own mean and variance over its B x T tokens (later positions included), as it
// does in training. Without grad; every buffer (running statistics, num_batches_tracked) is put
// back as it was, so the model is unchanged; m's mode is restored.
double train_mode_window_loss(CharModel& m, const std::vector<int64_t>& ids, int64_t block_size, int64_t batch,
                              int64_t max_windows = 0);

// Throws normlab::Error for settings that cannot train (naming the flags): steps < 1, warmup not
// below steps, negative clipping, an optimizer's or schedule's own checks.
// The model's sizes and the batch against the size limits (models/size_limits.h) too, `flags`
// naming the flags the sizes were typed with.
void check_lm_config(const LmTrainConfig& c, const CharModelFlags& flags = {});

// Throws normlab::Error for landscape probes (config.train.probe_every, curvature_samples) that
// cannot run: negative, on a model other than the GPT, or a probe batch of more windows than the
// corpus's training split has. The probes of a GPT run: every probe_every steps the step
// measures of landscape.h with the embeddings, each block and the final norm with the head as its
// layers; the curvature on the training split's first curvature_samples windows.
void check_lm_probes(const LmTrainConfig& c, const data::TextCorpus& corpus);

}  // namespace normlab::experiments
