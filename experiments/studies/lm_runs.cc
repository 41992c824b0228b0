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
#include "experiments/models/archs.h"
#include "experiments/models/language_model.h"
#include "experiments/registry/optimizers.h"
#include "experiments/report/report.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/output.h"
#include "experiments/support/progress.h"

namespace normlab::experiments::studies {

using autograd::Tensor;

namespace {

// The GPT's norm as --norms names it (models/archs.h: the gpt arch's norms and positions); any
// other name throws normlab::Error naming it and listing the names.
NormChoice choice_of(const std::string& name) {
  if (std::optional<NormChoice> c = find_norm_choice(arch("gpt"), name)) return *c;
  std::string names;
  for (const std::string& n : gpt_variant_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error("--norms " + name + ": a GPT takes the norms " + names +
              " (the block norm, pre-norm unless it ends in -post)");
}

}  // namespace

std::string lm_outcome(const RunResult& r) {
  std::string text;
  if (const EvalRecord* e = final_eval(r)) {
    text = "validation " + fmt(bits(e->val_loss), 4) + " bits/char";
    if (std::isfinite(e->val_loss_train_mode)) text += " (train mode " + fmt(bits(e->val_loss_train_mode), 4) + ")";
  } else {
    text = "diverged at step " + std::to_string(r.steps.size());
  }
  return text + ", " + fmt(r.seconds, 3) + " s";
}

const std::vector<std::string>& gpt_variant_names() {
  static const std::vector<std::string> names = norm_choice_names(arch("gpt"));
  return names;
}

bool is_gpt_variant(const std::string& name) { return find_norm_choice(arch("gpt"), name).has_value(); }

GptVariant gpt_variant(const std::string& name) {
  const NormChoice c = choice_of(name);
  return {*c.entry->block_norm, c.position};
}

std::string variant_display(const std::string& name) {
  const NormChoice c = choice_of(name);
  const nn::BlockNorm norm = *c.entry->block_norm;
  if (norm == nn::BlockNorm::None) return report::display_name(c.entry->name);
  return report::display_name(c.entry->name) + (nn::has_batch_statistics(norm) ? " over tokens" : "") + " (" +
         nn::norm_position_name(c.position) + "-norm)";
}

report::Style variant_style(const std::string& name) {
  const NormChoice c = choice_of(name);
  report::Style s = report::norm_style(c.entry->name);
  if (c.position == nn::NormPosition::Post) s.dash = 2, s.point = s.point > 1 ? s.point - 1 : s.point;
  return s;
}

bool variant_has_batch_statistics(const std::string& name) { return nn::has_batch_statistics(*choice_of(name).entry->block_norm); }

void check_lm_run(const LmRunSpec& s, const LmRunFlags& flags) {
  check_lm_config(s.config, flags);
  check_lm_probes(s.config, *s.corpus);
  const int64_t tokens = s.config.train.batch_size * s.config.model.block_size;
  if (nn::has_batch_statistics(s.config.model.gpt.norm) && tokens < 2)
    throw Error(flags.norms + " " + s.variant + " normalizes over the batch x block tokens: a batch of " +
                std::to_string(s.config.train.batch_size) + " x " + std::to_string(s.config.model.block_size) +
                " token has no variance (give " + flags.block + " 2 or more)");
}

std::string lm_run_label(const std::string& command, const LmRunSpec& s) {
  const TrainConfig& t = s.config.train;
  return command + ": norm " + s.variant + (command == "sweep" ? ", batch " + std::to_string(t.batch_size) : "") +
         ", seed " + std::to_string(t.seed);
}

}  // namespace normlab::experiments::studies
