// `normlab compare` and `normlab sweep --over batch` with --dataset text: the character GPT's norm
// studies (studies/lm_compare.h, studies/lm_sweep.h). The language-model flags of train (--text,
// --block-size, --layers, --heads, --width, --steps, --clip-grad-norm) and its presets (presets.h's
// text family: AdamW with nanoGPT's settings, batch 16, a tenth of the steps as warmup), --norms as GPT variants (layer,
// layer-post, rms, rms-post, batch, batch-post, none), sweep's --train-tokens, the flags that do not
// apply refused, and the run written into --out as one set.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "experiments/commands/text_training.h"
#include "experiments/studies/lm_compare.h"
#include "experiments/studies/lm_sweep.h"
#include "experiments/studies/study.h"

namespace normlab::experiments::commands {

// What --norms of compare and sweep accepts as typed: a registered norm, or a GPT variant (with
// --dataset text); anything else is "unknown norm 'foo' (expected one of: ...; with --dataset text
// --arch gpt: layer, layer-post, ...)".
CLI::Validator norm_or_gpt_variant();

// The GPT variants that are no registered norm (layer-post, ...) train on --dataset text only:
// an error naming the first of norms that is one, when dataset is not "text".
void refuse_gpt_variants(const std::vector<std::string>& norms, const std::string& dataset);

class TextStudy : public TextFlow {
 public:
  enum class Kind { Compare, Sweep };
  // What the study's flow reads of its command's flags: --norms, --seeds, and the sweep's
  // --batch-sizes and --over.
  struct Bound {
    const std::vector<std::string>* norms = nullptr;
    const std::vector<uint64_t>* seeds = nullptr;
    const std::vector<int64_t>* batch_sizes = nullptr;
    const studies::SweepOver* over = nullptr;
  };
  TextStudy(Kind kind, Bound bound) : kind_(kind), bound_(bound) {}

  // train's language-model flags; the sweep's --train-tokens.
  void add_flags(CLI::App& a);
  // Before the shared checks: the text family's presets (presets.h: preset_text), then the flags of
  // compare or sweep that do not apply to a GPT study refused (TextTraining::refuse first).
  void presets(TrainingOptions& o, const Given& given) override;
  // After the optimizer's values: --arch gpt only, TextTraining::check, and the study's settings
  // (the variants and the sweep's batch sizes: preset_text_variants, preset_text_batches; seeds).
  void check(TrainingOptions& o, const std::vector<std::string>& norms, const std::vector<uint64_t>& seeds,
             const std::vector<int64_t>& batch_sizes, const Given& given);
  // The same with the bound flags (the sweep: --over lr refused first).
  void check(TrainingOptions& o, const Given& given) override;
  // Reads the corpus and checks every run against it (normlab::Error names the flags).
  void plan(const TrainingOptions& o) override;
  // Trains and writes the results into --out as one set (Ctrl-C: the runs done); the exit status.
  // --text FILE, or the fortunes.
  std::vector<DataSource> data_sources() const override { return text_.data_sources(); }
  int run(const TrainingOptions& o, const nlohmann::json& settings, const Invocation& inv) override;

 private:
  void refuse_sweep_flags(const Given& given) const;
  int run_other_rank(StudyContext ctx, const std::string& out, const std::filesystem::path& resume_from);

  Kind kind_;
  Bound bound_;
  TextTraining text_;
  int64_t train_tokens_ = studies::kLmSweepTokens;
  std::vector<std::string> variants_;
  std::vector<uint64_t> seeds_;
  std::vector<int64_t> batch_sizes_;
  std::optional<studies::LmCompareConfig> compare_;
  std::optional<studies::LmSweepConfig> sweep_;
  std::vector<LmRunSpec> specs_;
};

}  // namespace normlab::experiments::commands
