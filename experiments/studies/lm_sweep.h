// `normlab sweep --dataset text --arch gpt --over batch`: the character GPT under each norm variant
// (lm_runs.h) at several batch sizes with the same number of training tokens at every one; the
// final validation bits per character against the batch size (mean over seeds, 95% intervals),
// BatchNorm's train-mode minus eval-mode gap against the batch size, per norm the batch sizes
// distinguishably worse than its best, and at one batch size the loss curves and a sample per norm.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "experiments/records/context.h"
#include "experiments/studies/lm_runs.h"

namespace normlab::experiments::studies {

// The default token budget of a run, the full protocol's: 4000 steps of batch 16 x block 64, four
// times train's default run. The default GPT trained so on the fortunes reaches about 2.56 bits
// per character, below the 4-gram baseline (2.73), which 1000 steps (3.18) do not.
inline constexpr int64_t kLmSweepTokens = 4000 * 16 * 64;
// The default batch sizes, in sequences (windows of --block-size characters).
inline const std::vector<int64_t> kLmSweepBatches{1, 2, 4, 16, 64};
// Each run's linear warmup: this fraction of its steps (rounded down), as train --dataset text does.
inline constexpr double kLmSweepWarmupFraction = 0.1;

struct LmSweepConfig {
  // The settings every run shares (the model's norm and position, the batch size, the steps and the
  // warmup are set per run; the learning rate is the same at every batch size).
  LmTrainConfig base;
  std::shared_ptr<const data::TextCorpus> corpus;
  std::vector<std::string> variants{"layer", "layer-post", "rms", "batch", "none"};
  std::vector<uint64_t> seeds{0, 1};
  std::vector<int64_t> batch_sizes = kLmSweepBatches;
  int64_t tokens = kLmSweepTokens;  // training tokens per run
  LmRunFlags flags = LmRunFlags::sweep();  // the flags its settings were typed with, for the errors
};

// The batch size whose runs the report shows as loss curves and samples: the middle one of the
// sorted sizes (the lower of the two middle ones), e.g. 4 of 1,2,4,16,64. Throws for no size.
int64_t lm_sweep_example_batch(std::vector<int64_t> batch_sizes);

// The steps of a run at batch b with windows of T characters: round(tokens / (b T)), at least 1;
// it then trains steps x b x T tokens, within b T / 2 of the budget.
int64_t lm_sweep_steps(int64_t tokens, int64_t batch, int64_t block);

// Every run (variant, then batch size, then seed), checked (check_lm_run). Throws normlab::Error
// naming the flag for no variant, seed or batch size, an unknown variant, a budget below one
// window, a corpus without a validation split.
std::vector<LmRunSpec> lm_sweep_runs(const LmSweepConfig& cfg);

// Trains the runs and writes into ctx.out: runs.csv (write_lm_runs_csv: one row per run, its final
// evaluation), summary.csv (per variant and batch size: steps, tokens, the final validation bits
// per character and for BatchNorm the train-mode loss and its gap, each with _n, _mean, _std,
// _sem, _ci95_low, _ci95_high), steps.csv (every step of the runs at lm_sweep_example_batch),
// baselines.csv, val_bits_vs_batch.png/.svg, bn_train_eval_gap.png/.svg (with a BatchNorm variant),
// loss_curves.png/.svg (those runs' training loss), report.md and manifest.json.
Report run_lm_sweep(const LmSweepConfig& cfg, const std::vector<LmRunSpec>& runs, const StudyContext& ctx);

}  // namespace normlab::experiments::studies
