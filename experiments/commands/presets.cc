// The training commands' presets, one section per family (presets.h): each option's rule is one
// statement under `// --flag: typed > A > B > default`, the rules of other families named in it.
#include "experiments/commands/presets.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "experiments/models/archs.h"
#include "experiments/registry/datasets.h"
#include "experiments/registry/layers.h"
#include "experiments/registry/optimizers.h"
#include "experiments/report/claims.h"
#include "experiments/report/report.h"
#include "experiments/studies/lm_sweep.h"
#include "experiments/support/output.h"

namespace normlab::experiments::commands {

// ---- tables ----

namespace {

constexpr int64_t kCsvMaxEpochs = 200;     // scikit-learn's max_iter
constexpr int64_t kCsvStepBudget = 20000;  // a CSV file's epochs stop growing past about this many steps
constexpr int64_t kCsvPatience = 10;       // scikit-learn's n_iter_no_change

}  // namespace

int64_t csv_batch_for(int64_t n) {
  const double eighth = std::max(1.0, static_cast<double>(n) / 8);
  const int64_t b = int64_t(1) << std::lround(std::log2(eighth));
  return std::max<int64_t>(1, std::min({std::max<int64_t>(b, 8), int64_t(128), n}));
}

CsvFit preset_tables(TrainingOptions& o, const Given& given, bool fits_csv_files) {
  DataSpec& d = o.data;
  TrainConfig& t = o.train;
  const bool quick = o.quick;
  // --dataset: typed > --csv typed: csv (TrainingCommand::check) > --quick: moons > fashion-mnist
  if (quick && !given("--dataset") && !given("--csv")) d.name = "moons";
  const DatasetEntry& ds = dataset(d.name);
  const bool csv = fits_csv_files && !quick && d.name == "csv";  // --quick turns a CSV file's defaults off
  CsvFit fit;
  if (csv)
    fit = {.batch = !given("--batch-size"), .epochs = !given("--epochs"), .optimizer = !given("--optimizer"),
           .validation = !given("--val-fraction")};
  // --samples: typed > --quick 2000 (the default's value) > 2000
  if (quick && !given("--samples")) d.samples = 2000;
  // --noise: typed > --quick 0.25 > 0.1
  if (quick && !given("--noise")) d.noise = 0.25;
  // --epochs: typed > --quick 3 > a CSV file's, from its rows (fit_to_rows) > sweep --full 5 (preset_sweep) > 5
  if (quick && !given("--epochs")) t.epochs = 3;
  // --batch-size: typed > text 16 (preset_text) > --quick 32 > a CSV file's, from its rows (fit_to_rows) > 128
  if (quick && !given("--batch-size")) t.batch_size = 32;
  // --warmup: typed > text: a tenth of --steps (preset_text) > --quick 10 > the data set's (fashion-mnist 50) > 0
  if (!given("--warmup")) {
    if (quick) t.warmup_steps = 10;
    else if (ds.warmup) t.warmup_steps = *ds.warmup;
  }
  // --stats-every: typed > --quick 10 > 0 (the commands record about 50 times per run)
  if (quick && !given("--stats-every")) t.stats_every = 10;
  // --optimizer: typed > a CSV file's adam > the arch's (preset_arch) > text adamw (preset_text) > sgd
  if (fit.optimizer) t.optimizer = "adam";
  // --val-fraction: typed > text 0.1 (preset_text) > study on fashion-mnist 0.1 (preset_study) > a CSV
  // file's 0.1, a default that may round to no sample (validation_defaulted) > 0
  if (fit.validation) d.validation_fraction = 0.1, d.validation_defaulted = true;
  // --early-stopping: typed > a CSV file's 10 with a validation fraction above 0 (fit_to_rows: 0 when
  // the split came out empty) > 0
  fit.early_stopping = csv && !given("--early-stopping") && d.validation_fraction > 0;
  if (fit.early_stopping) t.early_stopping = kCsvPatience;
  return fit;
}

std::string tables_help(const std::string& flag, bool fits_csv_files) {
  const bool csv = fits_csv_files;
  const std::vector<std::pair<std::string, std::string>> help{
      {"--dataset", "moons with --quick, else fashion-mnist"},
      {"--noise", "0.25 with --quick, else 0.1"},
      {"--epochs", csv ? "3 with --quick, on a CSV file from its size (at most 200), else 5" : "3 with --quick, else 5"},
      {"--batch-size",
       csv ? "32 with --quick, on a CSV file from its size (8 to 128), else 128" : "32 with --quick, else 128"},
      {"--warmup", "10 with --quick, 50 on fashion-mnist, else 0"},
      {"--stats-every", "10 with --quick, else 0, which records about 50 times per run"},
      {"--val-fraction", csv ? "0.1 on a CSV file, else 0" : ""},
      {"--early-stopping", "10 on a CSV file with a validation split, else off"},
      {"--clip-grad-norm", "1 with --arch lstm or --dataset text, else 0"},
      {"--lr", "0.001 with --optimizer adam or adamw, 0.1 with --quick, else 0.05"},
      {"--weight-decay", "0.01 with --optimizer adamw, else 0"},
      {"--hidden", "32,32 with --quick, 256,256 on fashion-mnist, else 64,64"},
      {"--image-shape", "1,28,28 on fashion-mnist"},
      {"--eval-batch", "1000, 100 with --arch cnn and in the study's CNN part"},
  };
  for (const auto& [f, text] : help)
    if (f == flag) return text;
  return "";
}

void preset_arch(TrainingOptions& o, const Given& given, const CsvFit& csv, std::vector<std::string>& chosen) {
  TrainConfig& t = o.train;
  const ArchEntry& a = arch(t.model.arch);
  // --optimizer: typed > a CSV file's adam (preset_tables) > the arch's, compare and sweep (lstm: adam) > sgd
  if (!given("--optimizer") && !csv.optimizer && !a.default_optimizer.empty()) {
    t.optimizer = a.default_optimizer;
    const std::optional<double> lr = optimizer(a.default_optimizer).default_lr;
    chosen.push_back("--optimizer " + a.default_optimizer + (given("--lr") || !lr ? "" : " (lr " + fmt(*lr) + ")"));
  }
  // --clip-grad-norm: typed > text 1 (preset_text) > the arch's, compare and sweep (lstm: 1) > 0
  if (!given("--clip-grad-norm") && a.default_clip_grad_norm > 0) {
    t.clip_grad_norm = a.default_clip_grad_norm;
    chosen.push_back("--clip-grad-norm " + fmt(a.default_clip_grad_norm));
  }
}

void preset_optimizer(TrainingOptions& o, const Given& given) {
  TrainConfig& t = o.train;
  const OptimizerEntry& opt = optimizer(t.optimizer);
  // --lr: typed > the final optimizer's (adam, adamw: 0.001) > --quick 0.1 > 0.05
  if (!given("--lr")) {
    if (opt.default_lr) t.lr = *opt.default_lr;
    else if (o.quick) t.lr = 0.1;
  }
  // --weight-decay: typed > text with adamw 0.1 (preset_text_optimizer) > the optimizer's (adamw 0.01) > 0
  if (!given("--weight-decay") && opt.default_weight_decay != 0) t.weight_decay = opt.default_weight_decay;
  // --betas: typed > text with adam or adamw 0.9,0.95 (preset_text_optimizer) > 0.9,0.999
  if (!o.betas.empty()) t.beta1 = o.betas[0], t.beta2 = o.betas[1];
}

void preset_model(TrainingOptions& o, const Given& given) {
  ModelSpec& m = o.train.model;
  const ArchEntry& a = arch(m.arch);
  const DatasetEntry& ds = dataset(o.data.name);
  // --hidden: typed > the arch's (lstm 128) > --quick 32,32 > the data set's (fashion-mnist 256,256) > 64,64
  // (text: preset_text_lstm)
  if (!given("--hidden"))
    m.hidden = !a.default_hidden.empty() ? a.default_hidden
               : o.quick                 ? std::vector<int64_t>{32, 32}
               : !ds.hidden.empty()      ? ds.hidden
                                         : std::vector<int64_t>{64, 64};
  if (!a.image) return;
  // --image-shape: typed > the data set's, with an image arch (none: check_architecture refuses it) > none
  if (m.image.empty()) m.image = ds.image_shape;
  // --eval-batch: typed > an image arch's 100 (kCnnEvalBatch; the study's CNN part too) > 1000
  if (!given("--eval-batch")) o.train.eval_batch = kCnnEvalBatch;
}

std::string fit_to_rows(TrainConfig& t, const CsvFit& csv, const Splits& data) {
  if (!csv.any()) return "";
  const int64_t n = data.train.size();
  // --batch-size, a CSV file's: the power of two nearest to an eighth of the rows, 8 to 128 (csv_batch_for)
  if (csv.batch) t.batch_size = csv_batch_for(n);
  const int64_t steps = std::max<int64_t>(1, (n + t.batch_size - 1) / t.batch_size);
  // --epochs, a CSV file's: about kCsvStepBudget steps at the final batch size, 5 to 200
  if (csv.epochs) t.epochs = std::clamp<int64_t>((kCsvStepBudget + steps - 1) / steps, 5, kCsvMaxEpochs);
  // --early-stopping, a CSV file's: off when the validation split came out empty
  if (csv.early_stopping && data.validation.size() == 0) t.early_stopping = 0;
  std::vector<std::string> chosen;
  if (csv.batch) chosen.push_back("batch " + std::to_string(t.batch_size));
  if (csv.epochs) chosen.push_back((t.early_stopping > 0 ? "at most " : "") + report::count_of(t.epochs, "epoch"));
  if (csv.early_stopping)
    chosen.push_back(t.early_stopping > 0 ? "early stopping after " + report::count_of(t.early_stopping, "epoch") +
                                                " without a lower validation loss (keeping the best epoch's weights)"
                                          : std::string("no early stopping (the validation split is empty)"));
  if (csv.validation) chosen.push_back("a validation split of 10% (" + std::to_string(data.validation.size()) + " rows)");
  if (csv.optimizer) chosen.push_back(optimizer_text(t));
  return "Defaults for a CSV file of " + std::to_string(n) + " training rows (the flags not given): " +
         report::join_names(chosen) +
         ". `--batch-size`, `--epochs`, `--early-stopping`, `--val-fraction` and `--optimizer` set them.";
}

// ---- text ----

void preset_text(TrainingOptions& o, const Given& given, int64_t steps, TextKind kind) {
  TrainConfig& t = o.train;
  // --arch (text): typed > gpt
  if (!given("--arch")) t.model.arch = "gpt";
  // --optimizer (text): typed > adamw
  if (!given("--optimizer")) t.optimizer = "adamw";
  // --batch-size (text): typed > 16
  if (!given("--batch-size")) t.batch_size = kTextBatch;
  // --val-fraction (text): typed > 0.1 (not validation_defaulted: it must give a sample)
  if (!given("--val-fraction")) o.data.validation_fraction = kTextValFraction;
  // --warmup (text): typed > a tenth of --steps
  if (!given("--warmup")) t.warmup_steps = steps / 10;
  if (kind == TextKind::Train) return;  // train's --clip-grad-norm is the text flow's own flag (TextFlags)
  // --clip-grad-norm (text, compare and sweep): typed > 1, as train's
  if (!given("--clip-grad-norm")) t.clip_grad_norm = kTextClip;
  // --eval-every (text, compare): typed > a tenth of --steps (at least 1)
  if (kind == TextKind::Compare && !given("--eval-every")) t.eval_every = std::max<int64_t>(1, steps / 10);
}

void preset_text_optimizer(TrainConfig& t, const Given& given) {
  // --weight-decay (text): typed > with adamw 0.1 > the optimizer's (preset_optimizer)
  if (t.optimizer == "adamw" && !given("--weight-decay")) t.weight_decay = kTextWeightDecay;
  // --betas (text): typed > with adam or adamw 0.9,0.95 > 0.9,0.999
  if ((t.optimizer == "adamw" || t.optimizer == "adam") && !given("--betas")) t.beta2 = kTextBeta2;
}

std::string preset_text_norm(const std::string& norm, const Given& given) {
  // --norm (text, --arch gpt): typed > layer
  return given("--norm") ? norm : "layer";
}

void preset_text_lstm(CharModelSpec& m, const std::vector<int64_t>& hidden, int64_t layers, int64_t width,
                      const Given& given) {
  // --hidden (text, --arch lstm): typed (one width) > 256
  m.lstm.hidden_size = given("--hidden") ? hidden[0] : 256;
  // --layers (text, --arch lstm): typed > 1 (a GPT's: 4)
  m.lstm.num_layers = given("--layers") ? layers : 1;
  // --width (text, --arch lstm): typed > 64 (a GPT's: 128)
  m.lstm.embed_dim = given("--width") ? width : 64;
}

std::vector<std::string> preset_text_variants(const std::vector<std::string>& norms, const Given& given) {
  // --norms (text, compare and sweep): typed > layer, layer-post, rms, batch, none
  return given("--norms") ? norms : std::vector<std::string>{"layer", "layer-post", "rms", "batch", "none"};
}

std::vector<int64_t> preset_text_batches(const std::vector<int64_t>& batch_sizes, const Given& given) {
  // --batch-sizes (text, sweep): typed > 1,2,4,16,64 (kLmSweepBatches)
  return given("--batch-sizes") ? batch_sizes : studies::kLmSweepBatches;
}

// ---- sweep ----

void preset_sweep(SweepOptions& s, TrainingOptions& o, const Given& given, int job_size) {
  const bool quick = o.quick, full = s.full, local_vs_sync = o.train.distributed && job_size > 0;
  // (--quick and --full, --full and --distributed are refused: SweepCommand::check_own)
  // --train-limit (sweep): typed > --full 0 (the default's value) > 0
  if (full && !given("--train-limit")) o.data.train_limit = 0;
  // --epochs (sweep): typed > --quick 3 (preset_tables) > --full 5 (the default's value) > 5
  if (full && !given("--epochs")) o.train.epochs = 5;
  // --seeds (sweep): typed > --full 0,1,2,3,4 > 0,1,2
  if (full && !given("--seeds")) s.seeds = {0, 1, 2, 3, 4};
  // --batch-sizes (sweep): typed > --distributed in an mpirun job 2,4,8 > --quick 2,8,32,128 > --full
  // 2..256 (the default's value) > 2,4,8,16,32,64,128,256 (text: preset_text_batches)
  if (!given("--batch-sizes")) {
    if (local_vs_sync) s.batch_sizes = {2, 4, 8};
    else if (quick) s.batch_sizes = studies::kQuickSweepBatches;
    else if (full) s.batch_sizes = studies::kSweepBatches;
  }
  // --lrs (sweep): typed > --quick 0.01,0.1,1 > 0.01,0.03,0.1,0.3,1,3
  if (quick && !given("--lrs")) s.lrs = {0.01, 0.1, 1.0};
  // --norms (sweep): typed > --distributed in an mpirun job: batch (each rank's), syncbatch, layer,
  // group > none,batch,layer (text: preset_text_variants)
  if (local_vs_sync && !given("--norms")) s.norms = {local_bn(), sync_bn(), "layer", "group"};
  // --ranks (sweep): typed > --distributed in an mpirun job: every divisor of its size > none
  if (local_vs_sync && s.ranks.empty())
    for (int w = 1; w <= job_size; ++w)
      if (job_size % w == 0) s.ranks.push_back(w);
}

std::string sweep_help(const std::string& flag) {
  if (flag == "--seeds") return "0,1,2,3,4 with --full, else 0,1,2";
  if (flag == "--batch-sizes") return "2,8,32,128 with --quick, else 2,4,8,16,32,64,128,256";
  if (flag == "--lrs") return "0.01,0.1,1 with --quick, else 0.01,0.03,0.1,0.3,1,3";
  if (flag == "--lr-scaling") return "sqrt with --arch lstm (Adam), else linear";
  return "";
}

void preset_sweep_arch(SweepOptions& s, const TrainingOptions& o, const ArchEntry& a, const Given& given,
                       std::vector<std::string>& chosen) {
  // --lr-scaling (sweep): typed > the arch's with --over batch, without --distributed (lstm: sqrt) > linear
  if (given("--lr-scaling") || a.default_lr_scaling.empty() || s.over != studies::SweepOver::Batch ||
      o.train.distributed)
    return;
  s.lr_scaling = studies::lr_scaling_from(a.default_lr_scaling);
  chosen.push_back("--lr-scaling " + a.default_lr_scaling);
}

}  // namespace normlab::experiments::commands
