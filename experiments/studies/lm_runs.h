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

#include "experiments/config/lm_config.h"
#include "experiments/records/run_result.h"
#include "experiments/report/plot.h"
#include "experiments/run/lm_run.h"

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

// The flags a compare's or sweep's runs were typed with, for the errors (the study's GPT part:
// --gpt-norms, --gpt-batch-sizes, --gpt-block-size...).
struct LmRunFlags : CharModelFlags {
  std::string norms = "--norms";
  std::string tokens = "--train-tokens";
  std::string seeds = "--seeds";
  // A sweep's: the batch sizes from --batch-sizes.
  static LmRunFlags sweep() {
    LmRunFlags f;
    f.batch = "--batch-sizes";
    return f;
  }
};

// Throws normlab::Error (naming the flags) for settings that cannot train: check_lm_config's, and
// BatchNorm over a batch of a single token (no variance: --batch-size x --block-size must be 2 or more).
void check_lm_run(const LmRunSpec& s, const LmRunFlags& flags = {});

// What a run's line says when it ends: "validation 2.345 bits/char (train mode 2.101), 12.3 s" or
// "diverged at step 40, 1.2 s".
std::string lm_outcome(const RunResult& r);

// A spec's progress label: "compare: norm layer-post, seed 1", "sweep: norm batch, batch 4, seed 0".
std::string lm_run_label(const std::string& command, const LmRunSpec& s);

}  // namespace normlab::experiments::studies
