// The runs of the GPT normalization studies: variants, one run with its evaluations and sample
// (lm_runs.h).
#include "experiments/studies/lm_runs.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "autograd/engine.h"
#include "autograd/loss.h"
#include "autograd/shape_ops.h"
#include "base/error.h"
#include "experiments/models/language_model.h"
#include "experiments/registry/optimizers.h"
#include "experiments/report/report.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/output.h"
#include "experiments/support/progress.h"

namespace normlab::experiments::studies {

using autograd::Tensor;

namespace {

struct VariantEntry {
  std::string name, norm;  // norm: the registry's name (its colour, marker, display name)
  GptVariant variant;
};

const std::vector<VariantEntry>& variant_table() {
  using nn::BlockNorm;
  using nn::NormPosition;
  static const std::vector<VariantEntry> t{
      {"layer", "layer", {BlockNorm::Layer, NormPosition::Pre}},
      {"layer-post", "layer", {BlockNorm::Layer, NormPosition::Post}},
      {"rms", "rms", {BlockNorm::RMS, NormPosition::Pre}},
      {"rms-post", "rms", {BlockNorm::RMS, NormPosition::Post}},
      {"batch", "batch", {BlockNorm::Batch, NormPosition::Pre}},
      {"batch-post", "batch", {BlockNorm::Batch, NormPosition::Post}},
      {"none", "none", {BlockNorm::None, NormPosition::Pre}},
  };
  return t;
}

const VariantEntry& entry_of(const std::string& name) {
  for (const VariantEntry& e : variant_table())
    if (e.name == name) return e;
  std::string names;
  for (const VariantEntry& e : variant_table()) names += (names.empty() ? "" : ", ") + e.name;
  throw Error("--norms " + name + ": a GPT takes the norms " + names +
              " (the block norm, pre-norm unless it ends in -post)");
}

}  // namespace

LmRunRules lm_study_rules(const LmRunSpec& s) {
  return {.eval_every = s.periodic ? s.config.train.eval_every : 0, .train_mode_eval = true};
}

std::string lm_outcome(const LmRunResult& r) {
  std::string text;
  if (const LmEvalPoint* e = r.final_eval()) {
    text = "validation " + fmt(bits(e->val_loss), 4) + " bits/char";
    if (std::isfinite(e->val_loss_train_mode)) text += " (train mode " + fmt(bits(e->val_loss_train_mode), 4) + ")";
  } else {
    text = "diverged at step " + std::to_string(r.steps.size());
  }
  return text + ", " + fmt(r.seconds, 3) + " s";
}

const std::vector<std::string>& gpt_variant_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const VariantEntry& e : variant_table()) v.push_back(e.name);
    return v;
  }();
  return names;
}

bool is_gpt_variant(const std::string& name) {
  const auto& n = gpt_variant_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

GptVariant gpt_variant(const std::string& name) { return entry_of(name).variant; }

std::string variant_display(const std::string& name) {
  const VariantEntry& e = entry_of(name);
  if (e.variant.norm == nn::BlockNorm::None) return report::display_name(e.norm);
  return report::display_name(e.norm) + (e.variant.norm == nn::BlockNorm::Batch ? " over tokens" : "") + " (" +
         nn::norm_position_name(e.variant.position) + "-norm)";
}

report::Style variant_style(const std::string& name) {
  const VariantEntry& e = entry_of(name);
  report::Style s = report::norm_style(e.norm);
  if (e.variant.position == nn::NormPosition::Post) s.dash = 2, s.point = s.point > 1 ? s.point - 1 : s.point;
  return s;
}

bool variant_has_batch_statistics(const std::string& name) { return entry_of(name).variant.norm == nn::BlockNorm::Batch; }

void check_lm_run(const LmRunSpec& s) {
  check_lm_config(s.config);
  const int64_t tokens = s.config.train.batch_size * s.config.model.block_size;
  if (s.config.model.gpt.norm == nn::BlockNorm::Batch && tokens < 2)
    throw Error("--norms " + s.variant + " normalizes over the batch x block tokens: a batch of " +
                std::to_string(s.config.train.batch_size) + " x " + std::to_string(s.config.model.block_size) +
                " token has no variance (give --block-size 2 or more)");
}

std::string lm_run_label(const std::string& command, const LmRunSpec& s) {
  const TrainConfig& t = s.config.train;
  return command + ": norm " + s.variant + (command == "sweep" ? ", batch " + std::to_string(t.batch_size) : "") +
         ", seed " + std::to_string(t.seed);
}

}  // namespace normlab::experiments::studies
