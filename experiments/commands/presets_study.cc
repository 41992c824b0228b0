// The study family's presets (presets.h): its own lists, and the settings of its CNN, LSTM and GPT
// parts, each option's rule under `// --flag: typed > A > B > default`.
#include <algorithm>
#include <cmath>

#include "experiments/commands/presets.h"
#include "experiments/models/archs.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the study runs

void preset_study(StudyOptions& s, TrainingOptions& o, const Given& given) {
  const bool fashion = !o.quick && o.data.name == "fashion-mnist";
  // --batch-sizes (study): typed > --quick 2,8,32,128 > fashion-mnist 2,4,8,32,128,256 > 2,4,8,16,32,64,128,256
  if (!given("--batch-sizes")) {
    if (o.quick) s.batch_sizes = kQuickSweepBatches;
    else if (fashion) s.batch_sizes = kStudySweepBatches;
  }
  // --val-fraction (study): typed > fashion-mnist without --quick 0.1 > 0 (not validation_defaulted)
  if (fashion && !given("--val-fraction")) o.data.validation_fraction = 0.1;
  // --sweep-train-limit (study): typed > fashion-mnist without --quick 10000 > 0
  if (fashion && !given("--sweep-train-limit")) s.sweep_train_limit = 10000;
}

std::string study_help(const std::string& flag) {
  if (flag == "--batch-sizes")
    return "2,8,32,128 with --quick, 2,4,8,32,128,256 on fashion-mnist, else 2,4,8,16,32,64,128,256";
  if (flag == "--val-fraction") return "0.1 on fashion-mnist without --quick, else 0";
  if (flag == "--sweep-train-limit") return "10000 on fashion-mnist without --quick, else 0";
  return "";
}

TrainConfig study_cnn_base(const TrainConfig& mlp, const StudyOptions& s, const Given& given) {
  TrainConfig base = mlp;
  base.model.arch = "cnn", base.model.image = {1, 28, 28}, base.model.layers = kDefaultCnn;
  // --eval-batch (the CNN part): typed > 100 (kCnnEvalBatch) > 1000
  if (!given("--eval-batch")) base.eval_batch = kCnnEvalBatch;
  // --cnn-epochs: typed > 1 (its comparison; its sweep: 1)
  base.epochs = s.cnn_epochs;
  // --warmup (the CNN part): typed > 0
  if (!given("--warmup")) base.warmup_steps = 0;
  return base;
}

TrainConfig study_cnn_compare(const TrainConfig& base, const StudyOptions& s, int64_t train_size) {
  TrainConfig cmp = base;
  // --cnn-batch-size: typed > 32; its lr: --lr x batch / 128
  cmp.batch_size = s.cnn_batch_size;
  cmp.lr = base.lr * static_cast<double>(s.cnn_batch_size) / 128.0;
  // --stats-every (the CNN comparison): typed > about 50 records per run
  if (cmp.stats_every == 0)
    cmp.stats_every = std::max<int64_t>(1, steps_per_run(cmp, std::min(s.cnn_train_limit, train_size)) / 50);
  return cmp;
}

TrainConfig study_cnn_sweep(const TrainConfig& base) {
  TrainConfig sweep = base;
  sweep.epochs = 1, sweep.stats_every = 0;
  return sweep;
}

TrainConfig study_why_compare(const TrainConfig& mlp, const StudyOptions& s) {
  TrainConfig c = mlp;
  c.optimizer = "sgd", c.momentum = 0, c.nesterov = false, c.weight_decay = 0;
  c.lr = s.why_lr, c.schedule = "none", c.warmup_steps = 0, c.batch_size = 128;
  c.epochs = s.why_epochs, c.stats_every = 0, c.eval_every = 0, c.early_stopping = 0;
  c.probe_every = s.why_probe_every;
  c.curvature_samples = s.why_curvature_samples, c.trace_samples = s.why_trace_samples;
  return c;
}

TrainConfig study_lstm_sweep(const TrainConfig& mlp, const StudyOptions& s, int64_t train_size, const Given& given) {
  TrainConfig base = mlp;
  const ArchEntry& a = arch("lstm");
  base.model.arch = "lstm", base.model.image = {1, 28, 28}, base.model.hidden = a.default_hidden;
  base.optimizer = a.default_optimizer, base.lr = s.lstm_lr, base.weight_decay = 0, base.momentum = 0;
  base.beta1 = 0.9, base.beta2 = 0.999, base.eps = 1e-8;
  base.clip_grad_norm = a.default_clip_grad_norm;
  base.epochs = s.lstm_epochs, base.stats_every = 0;
  // --warmup (the LSTM part): typed > a tenth of the samples its runs see, at batch 128
  if (!given("--warmup")) {
    const double samples = double(std::min(s.lstm_train_limit, train_size)) * double(s.lstm_epochs);
    base.warmup_steps = std::max<int64_t>(1, std::llround(0.1 * samples / 128.0));
  }
  return base;
}

TrainConfig study_lstm_compare(const SweepConfig& sweep, const StudyOptions& s, int64_t train_size) {
  TrainConfig base = sweep.base;
  // --lstm-batch-size: typed > 32; its lr and warmup scaled as the sweep's
  base.batch_size = s.lstm_batch_size;
  base.lr = scaled_lr(sweep, s.lstm_batch_size), base.warmup_steps = scaled_warmup(sweep, s.lstm_batch_size);
  base.stats_every = std::max<int64_t>(1, steps_per_run(base, std::min(s.lstm_train_limit, train_size)) / 25);
  return base;
}

LmTrainConfig study_gpt_base(const StudyOptions& s) {
  LmTrainConfig base;
  base.model.arch = "gpt", base.model.block_size = s.gpt_block;
  base.model.gpt.n_layer = s.gpt_layers, base.model.gpt.n_head = s.gpt_heads, base.model.gpt.width = s.gpt_width;
  base.train.optimizer = "adamw", base.train.lr = kTextLr, base.train.beta2 = kTextBeta2;
  base.train.weight_decay = kTextWeightDecay;
  base.train.schedule = "cosine";
  base.clip_grad_norm = kTextClip;
  return base;
}

}  // namespace normlab::experiments::commands
