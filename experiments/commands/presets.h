// The values the training commands' options take when they are not typed, one section per family
// (a table of samples; --dataset text; the sweep; the study). Each option's rule is one statement
// under a comment `// --flag: typed > A > B > default`: the first rule that applies wins, and
// `grep -- --flag experiments/commands/presets*` finds where its value is decided. Presets never
// throw or print; the checks stay in the commands, which call each preset where its values are
// first read (TrainingCommand::check: the command's own presets, then preset_tables, its checks,
// preset_arch, preset_optimizer, preset_model; plan: fit_to_rows once a CSV file is read). What
// --help says of each default is kept beside its rules (tables_help, sweep_help, study_help).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/commands/command.h"
#include "experiments/commands/training_options.h"
#include "experiments/config/lm_config.h"
#include "experiments/config/model_spec.h"
#include "experiments/models/archs.h"
#include "experiments/studies/study.h"

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

// What --help says of the default of a tables flag (preset_default): the rules above in words, kept
// beside them in presets.cc ("": none); fits_csv_files: train's and compare's, which name a CSV file's.
std::string tables_help(const std::string& flag, bool fits_csv_files);

// The batch size of a CSV file of n training rows: the power of two nearest to n / 8, between 8
// and 128 (and not above n): 16 for 120 rows, 64 for 455.
int64_t csv_batch_for(int64_t n);

// ---- text: train, compare and sweep with --dataset text (a character language model) ----
// nanoGPT's settings: AdamW (lr 0.001: preset_optimizer) with betas 0.9,0.95 and weight decay 0.1,
// batch 16, a warmup of a tenth of --steps, a contiguous 90/10 split, the gradient norm clipped to 1;
// the study's GPT part trains with the same values (study_gpt_base).
inline constexpr int64_t kTextBatch = 16;
inline constexpr double kTextValFraction = 0.1, kTextWeightDecay = 0.1, kTextBeta2 = 0.95, kTextClip = 1.0;
inline constexpr double kTextLr = 1e-3;  // AdamW's lr (preset_optimizer's for text; study_gpt_base's)

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

// ---- sweep: its lists of batch sizes, learning rates, norms, seeds and ranks ----
// --full is the complete protocol (all 60k images, 5 seeds, batch 2..256, 5 epochs), --quick's
// lists are short, and --distributed in an mpirun job is the local-vs-sync experiment.

// The sweep's own flags, with their defaults (the --help defaults).
struct SweepOptions {
  studies::SweepOver over = studies::SweepOver::Batch;
  std::vector<int64_t> batch_sizes = studies::kSweepBatches;
  std::vector<double> lrs{0.01, 0.03, 0.1, 0.3, 1.0, 3.0};
  int64_t reference_batch = 128;
  studies::LrScaling lr_scaling = studies::LrScaling::Linear;
  std::vector<std::string> norms{"none", "batch", "layer"};
  std::vector<uint64_t> seeds{0, 1, 2};
  std::vector<int> ranks;  // --distributed (empty: every divisor of the job's size)
  bool full = false;
};

// Before preset_tables (the sweep's own presets): --full's, --quick's and, in an mpirun job of
// job_size processes (0: none) with --distributed, the local-vs-sync experiment's.
void preset_sweep(SweepOptions& s, TrainingOptions& o, const Given& given, int job_size);

// What sweep --help says of the default of its flag (as tables_help).
std::string sweep_help(const std::string& flag);

// With the arch's defaults (preset_arch): its --lr-scaling, added to `chosen` as "--lr-scaling value".
void preset_sweep_arch(SweepOptions& s, const TrainingOptions& o, const ArchEntry& a, const Given& given,
                       std::vector<std::string>& chosen);

// ---- study: its MLP's comparison and sweep, and on Fashion-MNIST without --quick its CNN, LSTM
// and GPT parts (presets_study.cc) ----
// On Fashion-MNIST the study (make run) is sized to a few minutes on 2 cores with 3 seeds
// everywhere: the sweep on a random 10000 training images at batch 2, 4, 8, 32, 128 and 256 (the
// batch-size protocol without 16 and 64: precise BN recomputes the statistics over 10000 images), a
// validation split of 10%. The per-part sizes are the members below (their --help defaults).

// The study's own flags, with their defaults.
struct StudyOptions {
  std::vector<std::string> norms{"none", "batch", "layer"};
  std::vector<uint64_t> seeds{0, 1, 2};
  std::vector<int64_t> batch_sizes = studies::kSweepBatches;
  double target = 0.85;
  int64_t sweep_train_limit = 0;
  bool no_cnn = false, no_lstm = false, no_gpt = false;
  // The CNN part: a comparison at cnn_batch_size and a sweep of 1 epoch, on cnn_train_limit images.
  int64_t cnn_train_limit = 5000, cnn_epochs = 1, cnn_batch_size = 32;
  std::vector<int64_t> cnn_batch_sizes{2, 8, 64};
  std::vector<std::string> cnn_norms{"none", "batch", "layer", "group", "instance"};
  std::vector<std::string> cnn_sweep_norms{"batch", "layer", "group"};
  // The LSTM part: a sweep and a comparison at lstm_batch_size.
  int64_t lstm_train_limit = 4000, lstm_test_limit = 5000, lstm_epochs = 1, lstm_batch_size = 32;
  double lstm_lr = 1e-3;
  std::vector<int64_t> lstm_batch_sizes{4, 32};
  std::vector<std::string> lstm_norms{"none", "layer", "batch", "batch-shared"};
  // The GPT part: a sweep of a character GPT on gpt_text ("": the fortunes).
  std::string gpt_text;
  std::vector<std::string> gpt_norms{"layer", "batch", "none"};
  std::vector<int64_t> gpt_batch_sizes{2, 16};
  int64_t gpt_tokens = 160000, gpt_layers = 2, gpt_width = 64, gpt_heads = 4, gpt_block = 64;
  // The Why part: the MLP protocol of the landscape probes, shrunk (plain SGD at why_lr, batch
  // 128, a constant rate, why_epochs on why_train_limit images, probes every why_probe_every
  // steps, the curvature of why_curvature_samples images with why_trace_samples Hutchinson
  // draws), and the LSTM comparison probed every lstm_probe_every steps (no curvature: an LSTM's
  // Hessian-vector products cost too much for the budget).
  bool no_why = false;
  std::vector<std::string> why_norms{"none", "batch", "noisybatch", "layer"};
  int64_t why_train_limit = 3000, why_epochs = 2, why_probe_every = 10, why_curvature_samples = 500;
  int64_t why_trace_samples = 20, lstm_probe_every = 25;
  double why_lr = 0.1;
};

// Before preset_tables (the study's own presets): --quick's sweep, Fashion-MNIST's sizes.
void preset_study(StudyOptions& s, TrainingOptions& o, const Given& given);

// What study --help says of the default of its flag (as tables_help).
std::string study_help(const std::string& flag);

// The CNN part's runs, from the MLP's settings (mlp): the study's CNN, --cnn-epochs, no warmup
// unless --warmup is given (its runs are short: 39 steps at batch 128).
TrainConfig study_cnn_base(const TrainConfig& mlp, const StudyOptions& s, const Given& given);
// Its comparison: --cnn-batch-size with lr = --lr x batch / 128 (156 steps per epoch at 32, where
// 128 gave 39, too few to tell the norms apart), on train_size images.
TrainConfig study_cnn_compare(const TrainConfig& base, const StudyOptions& s, int64_t train_size);
// Its sweep: 1 epoch, no activation statistics.
TrainConfig study_cnn_sweep(const TrainConfig& base);

// The Why part's comparison, from the MLP's settings: the landscape probes' protocol shrunk
// (StudyOptions' why_* fields): plain SGD (no momentum, no weight decay) at --why-lr, constant,
// no warmup, batch 128, --why-epochs, no activation statistics.
TrainConfig study_why_compare(const TrainConfig& mlp, const StudyOptions& s);

// The LSTM part's sweep runs: the study's LSTM (the arch's default width) on rows of pixels, Adam
// with the gradient norm clipped to 1 and lr = --lstm-lr at batch 128, --lstm-epochs; its warmup
// (unless --warmup) covers a tenth of the samples the runs see, at every batch size.
TrainConfig study_lstm_sweep(const TrainConfig& mlp, const StudyOptions& s, int64_t train_size, const Given& given);
// Its comparison at --lstm-batch-size (lr and warmup scaled as the sweep's), the activations
// recorded about 25 times per run.
TrainConfig study_lstm_compare(const studies::SweepConfig& sweep, const StudyOptions& s, int64_t train_size);

// The GPT part's runs: the text family's settings (AdamW, lr 0.001, betas 0.9,0.95, weight decay
// 0.1, cosine decay, the gradient norm clipped to 1) with the --gpt-* sizes (vocab_size unset).
LmTrainConfig study_gpt_base(const StudyOptions& s);

}  // namespace normlab::experiments::commands
