// What the GPT normalization studies (lm_compare.h, lm_sweep.h) both write: the tidy runs.csv (one
// row per run x evaluation), the character n-gram baselines of the split (baselines.csv, a
// sentence, reference lines for plots), the setup paragraph, the cells of bits per character and
// the sentence that explains BatchNorm's train-mode vs eval-mode gap.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/records/context.h"
#include "experiments/report/claims.h"
#include "experiments/report/plot.h"
#include "experiments/studies/lm_runs.h"

namespace normlab::experiments::studies {

// Bits per character in reports: 3 decimals, differences in " bits/char".
inline const report::Units kBitsUnits{1, 3, " bits/char"};

// The smoothing of the n-gram baselines (add-alpha) and their orders.
inline constexpr double kNgramAlpha = 0.1;
inline constexpr int kNgramMaxOrder = 4;

struct NgramBaseline {
  int n;
  double bits;  // bits per character on the validation split (data::ngram_bits_per_char)
};
// The 1- to kNgramMaxOrder-gram baselines of corpus (counted on its training split, scored on its
// validation split, add-kNgramAlpha).
std::vector<NgramBaseline> ngram_baselines(const data::TextCorpus& corpus);
// baselines.csv: n, alpha, val_bits_per_char.
void write_baselines_csv(const std::vector<NgramBaseline>& b, const std::filesystem::path& path);
// "Character n-gram baselines of the same split (...): 1-gram 4.870, 2-gram 3.770, ... bits/char."
std::string baselines_sentence(const std::vector<NgramBaseline>& b);
// Where a validation loss of `bits` sits among the baselines, as a sentence starting "Its mean":
// the orders it beats and those it does not; when the highest order is not beaten, a warning that
// such a model says little about normalization.
std::string baseline_position(double bits, const std::vector<NgramBaseline>& b);
// Bits per character as the reports write one value: 3 decimals ("2.730").
std::string bits_text(double bits);
// The 2- to 4-gram baselines as labelled horizontal reference lines from x0 to x1 (grey, dashed).
std::vector<report::Series> baseline_lines(const std::vector<NgramBaseline>& b, double x0, double x1);

// runs.csv: per run (specs[i] trained results[i]) and evaluation, its settings (corpus, arch,
// norm = the variant, block_norm, position, seed, batch_size, block_size, layers, heads, width,
// parameters, lr, steps_planned) and the evaluation (step, tokens, windows, all_windows,
// val_loss, val_bits_per_char, val_loss_train_mode, val_bits_per_char_train_mode: BatchNorm only,
// else empty, diverged); a run that diverged has one row at its last step with NaN losses.
void write_lm_runs_csv(const std::vector<LmRunSpec>& specs, const std::vector<RunResult>& results,
                       const std::filesystem::path& path);

// The model's settings for a manifest (char_model_metadata without the norm and position, which
// each run's variant sets).
std::map<std::string, std::string> lm_sizes(const CharModelSpec& model);

// The corpus, split, model and optimizer of a study's runs (base: their shared settings), as
// markdown list items.
std::string lm_setup_markdown(const LmTrainConfig& base, const data::TextCorpus& c);

// Final validation losses over the seeds of the results of `variant` (and `batch` if > 0), in bits
// per character (NaN for a diverged run): eval mode, train mode, and train minus eval.
struct LmFinals {
  std::vector<double> eval, train_mode, gap;
  int runs = 0, diverged = 0;
};
LmFinals finals_of(const std::vector<RunResult>& results, const std::string& variant, int64_t batch = 0);

// BatchNorm's train-mode minus eval-mode loss over the seeds (LmFinals::gap: paired, each seed's
// model evaluated both ways): "-0.260 ± 0.105 bits/char (paired over the seeds: train mode lower,
// the 95% interval below 0)", or "... not distinguishable from 0 at n = 2", or "(one seed: not tested)".
std::string gap_text(const std::vector<double>& gap);

// The sentence on why BatchNorm's validation loss in training mode can differ from eval mode: in
// train mode every position is normalized with statistics of the whole batch of windows, later
// tokens included (a causal leak the model can learn to read), and at inference it must use
// running averages it never trained with (the train/inference mismatch).
std::string batch_gap_explanation();

// The training loss per step of each variant's runs (only those at `batch` when it is above 0),
// binned to about 100 points over `steps`, mean over seeds with a 95% band.
report::PlotSpec training_loss_plot(const std::vector<std::string>& variants, const std::vector<RunResult>& results,
                                    int64_t steps, int64_t batch = 0);

// "**Samples.** One per norm, from <which> (eval mode), ...": every result with a sample (and a final
// evaluation), its variant, seed and validation bits per character, and the prompt with the text.
std::string samples_markdown(const std::vector<RunResult>& results, const std::string& which);

}  // namespace normlab::experiments::studies
