// The runs of the GPT normalization studies (`normlab compare` and `normlab sweep` with --dataset
// text --arch gpt): the norm variants they take, one run trained with its validation losses
// (BatchNorm's also in training mode, with the statistics of each validation batch), a report's
// generated sample, and the runs of a study trained in turn under one progress bar.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/report/plot.h"
#include "experiments/studies/lm_train.h"

namespace normlab::experiments::studies {

// A GPT's norm variant as --norms names it: the block norm of ln_1 and ln_2 (nn::BlockNorm) and
// where it sits, pre-norm unless the name ends in "-post": "layer" (GPT-2's pre-norm LayerNorm),
// "layer-post" (the original Transformer's post-norm), "rms", "rms-post", "batch" (BatchNorm over
// the B x T tokens of a batch), "batch-post", and "none" (no norm, so no position).
struct GptVariant {
  nn::BlockNorm norm;
  nn::NormPosition position;
};
const std::vector<std::string>& gpt_variant_names();
bool is_gpt_variant(const std::string& name);
// The variant of a name; anything else throws normlab::Error naming it and listing the names.
GptVariant gpt_variant(const std::string& name);
// For reports and legends: "LayerNorm (pre-norm)", "RMSNorm (post-norm)", "BatchNorm over tokens
// (pre-norm)", "no norm".
std::string variant_display(const std::string& name);
// The registry's colour and marker of its norm; a post-norm variant dashed, with the open marker.
report::Style variant_style(const std::string& name);
// True for the variants with batch statistics (batch, batch-post).
bool variant_has_batch_statistics(const std::string& name);

// One evaluation of a run on the validation split: the first `windows` non-overlapping windows
// (every one when `all`), in batches of the run's training batch size.
struct LmEvalPoint {
  int64_t step = 0;
  int64_t windows = 0;
  bool all = false;
  double val_loss = NAN;             // nats per character, eval mode (BatchNorm: running statistics)
  double val_loss_train_mode = NAN;  // BatchNorm: train mode (each batch's own statistics); else NaN
};

// One run of a study: the variant, and the settings that train it (its model's norm and position
// the variant's; batch, seed, steps and warmup in config.train) on the corpus all runs share.
struct LmRunSpec {
  std::string variant;
  LmTrainConfig config;
  std::shared_ptr<const data::TextCorpus> corpus;
  bool periodic = false;  // also evaluate every config.train.eval_every steps before the last on kLmEvalWindows windows
  bool sample = false;    // generate the report's sample (kLmSample) after training
};

// Throws normlab::Error (naming the flags) for settings that cannot train: check_lm_plan's, and
// BatchNorm over a batch of a single token (no variance: --batch-size x --block-size must be 2 or more).
void check_lm_run(const LmRunSpec& s);

// How a report's sample is generated: this prompt (or, when a character of it is not in the
// vocabulary, the training split's first character), this many characters, this temperature
// (no top-k), this generator seed.
struct LmSampleSettings {
  std::string prompt = "The ";
  int64_t length = 120;
  double temperature = 0.8;
  uint64_t seed = 0;
};
inline const LmSampleSettings kLmSample;

struct LmRunResult {
  std::string variant;
  uint64_t seed = 0;
  int64_t batch_size = 0, block_size = 0, steps_planned = 0, parameters = 0;
  std::vector<LmStep> steps;
  std::vector<LmEvalPoint> evals;  // the periodic ones, then the final one over every window
  bool diverged = false, interrupted = false;
  double seconds = 0;
  std::string sample_prompt, sample;  // UTF-8; empty without a sample
  // The final evaluation over every window (nullptr: diverged, interrupted or no validation split).
  const LmEvalPoint* final_eval() const;
  // Training tokens seen: steps done x batch x block.
  int64_t tokens() const { return static_cast<int64_t>(steps.size()) * batch_size * block_size; }
};

// window_loss (language_model.h) with m in training mode: BatchNorm normalizes each batch of
// windows with its own mean and variance over its B x T tokens (later positions included), as it
// does in training. Without grad; every buffer (running statistics, num_batches_tracked) is put
// back as it was, so the model is unchanged; m's mode is restored.
double train_mode_window_loss(CharModel& m, const std::vector<int64_t>& ids, int64_t block_size, int64_t batch,
                              int64_t max_windows = 0);

// Trains one run of a study, calling on_step(steps done) after every step: the periodic
// evaluations (when s.periodic) before the last step, then, unless it diverged or Ctrl-C stopped
// it before its last step, the final evaluation over every window and the sample (when s.sample).
LmRunResult train_lm_run(const LmRunSpec& s, const std::function<void(int64_t)>& on_step);

// What a run's line says when it ends: "validation 2.345 bits/char (train mode 2.101), 12.3 s" or
// "diverged at step 40, 1.2 s".
std::string lm_outcome(const LmRunResult& r);

// A spec's progress label: "compare: norm layer-post, seed 1", "sweep: norm batch, batch 4, seed 0".
std::string lm_run_label(const std::string& command, const LmRunSpec& s);

}  // namespace normlab::experiments::studies
