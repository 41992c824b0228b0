// The values the training commands' options take when they are not typed, one section per family
// (a table of samples; --dataset text; the sweep; the study). Each option's rule is one statement
// under a comment `// --flag: typed > A > B > default`: the first rule that applies wins, and
// `grep -- --flag experiments/commands/presets.*` finds where its value is decided. Presets never
// throw or print; the checks stay in the commands, which call each preset where its values are
// first read (TrainingCommand::check: the command's own presets, then preset_tables, its checks,
// preset_arch, preset_optimizer, preset_model; plan: fit_to_rows once a CSV file is read).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/commands/training.h"
#include "experiments/config/model_spec.h"

namespace normlab::experiments::commands {

// ---- tables: train, compare, sweep and study on a table of samples ----
// --quick (a synthetic two-moons set and a small MLP, seconds per study), the data set's entry
// (Fashion-MNIST: MLP 784-256-256-10, 50 warmup steps), and on a CSV file with train and compare,
// scikit-learn's MLP choices (Adam at lr 0.001, early stopping with patience 10 on a 10% validation
// split, at most 200 epochs) and a batch size from the number of training rows. --quick turns the
// CSV file's defaults off.

// After the command's own presets: --quick's values or the data set's, and a CSV file's (fits_csv_files:
// train and compare); returns which of the CSV file's defaults apply (CsvFit, training.h).
CsvFit preset_tables(TrainingOptions& o, const Given& given, bool fits_csv_files);

// compare and sweep: the arch's optimizer and clipping where not given (the lstm: Adam, clipped to
// 1); each one applied is added to `chosen` as "--flag value", for the report.
void preset_arch(TrainingOptions& o, const Given& given, const CsvFit& csv, std::vector<std::string>& chosen);

// Once the optimizer is final (every family): its learning rate and weight decay (PyTorch's for
// Adam and AdamW), and the betas typed.
void preset_optimizer(TrainingOptions& o, const Given& given);

// The model's: the hidden widths, and an image arch's image shape and evaluation batch.
void preset_model(TrainingOptions& o, const Given& given);

// Once a CSV file's training set is read: the batch size and the epochs it gets (those not given),
// early stopping off when the validation split came out empty; returns the sentence that says what
// was chosen ("": no CSV default applies).
std::string fit_to_rows(TrainConfig& t, const CsvFit& csv, const Splits& data);

// The batch size of a CSV file of n training rows: the power of two nearest to n / 8, between 8
// and 128 (and not above n): 16 for 120 rows, 64 for 455.
int64_t csv_batch_for(int64_t n);

// ---- text: train, compare and sweep with --dataset text (a character language model) ----
// nanoGPT's settings: AdamW (lr 0.001: preset_optimizer) with betas 0.9,0.95 and weight decay 0.1,
// batch 16, a warmup of a tenth of --steps, a contiguous 90/10 split, the gradient norm clipped to 1;
// the study's GPT part trains with the same values.
inline constexpr int64_t kTextBatch = 16;
inline constexpr double kTextValFraction = 0.1, kTextWeightDecay = 0.1, kTextBeta2 = 0.95, kTextClip = 1.0;

enum class TextKind { Train, Compare, Sweep };

// Before the text flow's checks: --arch, --optimizer, --batch-size, --val-fraction and --warmup (a
// tenth of steps, the parsed --steps); compare's and sweep's --clip-grad-norm, compare's --eval-every.
void preset_text(TrainingOptions& o, const Given& given, int64_t steps, TextKind kind);

// After preset_optimizer: AdamW's weight decay, Adam's and AdamW's second beta.
void preset_text_optimizer(TrainConfig& t, const Given& given);

// The GPT's norm: train's --norm (norm) when typed, else layer.
std::string preset_text_norm(const std::string& norm, const Given& given);

// --arch lstm: the CharLSTM's width (--hidden, one width), layers (--layers) and embedding (--width).
void preset_text_lstm(CharModelSpec& m, const std::vector<int64_t>& hidden, int64_t layers, int64_t width,
                      const Given& given);

// compare and sweep: the GPT variants they train (--norms, as typed).
std::vector<std::string> preset_text_variants(const std::vector<std::string>& norms, const Given& given);

// sweep: the batch sizes (--batch-sizes, as typed).
std::vector<int64_t> preset_text_batches(const std::vector<int64_t>& batch_sizes, const Given& given);

}  // namespace normlab::experiments::commands
