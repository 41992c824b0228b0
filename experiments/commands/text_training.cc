// `normlab train --dataset text`: a character language model's flags, checks and run (text_training.h;
// its presets: presets.h, the text family).
#include "experiments/commands/text_training.h"

#include <cstdio>
#include <limits>

#include "experiments/commands/cli.h"
#include "experiments/commands/flags.h"
#include "experiments/models/language_model.h"
#include "experiments/records/result_set.h"
#include "experiments/registry/optimizers.h"
#include "experiments/run/lm_run.h"
#include "experiments/support/interrupt.h"

namespace normlab::experiments::commands {

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// The shared training flags a language model does not read, each with what to use instead.
const std::vector<std::pair<std::string, std::string>>& not_for_text() {
  static const std::vector<std::pair<std::string, std::string>> flags{
      {"--epochs", "it trains for --steps"},
      {"--early-stopping", "it trains for --steps and keeps the last weights"},
      {"--stats-every", "it records the loss, learning rate and gradient norm of every step"},
      {"--eval-batch", "the validation windows go in batches of --batch-size"},
      {"--train-limit", "it trains on random windows of the training split"},
      {"--test-limit", "a text has a training and a validation split only (--val-fraction)"},
      {"--test-fraction", "a text has a training and a validation split only (--val-fraction)"},
      {"--data-seed", "the split is contiguous, not shuffled (--seed draws the batches)"},
      {"--quick", "give --steps, --width, --layers for a smaller run"},
      {"--checkpoint-every", "not supported for language models yet"},
      {"--resume", "not supported for language models yet"},
      {"--init-from", "not supported for language models yet"},
      {"--distributed", "not supported for language models yet"},
      {"--activation", "a GPT's MLP uses GELU (tanh form), an LSTM its cell's sigmoid and tanh"},
      {"--model", "it sets a CNN's layers; a GPT is sized by --layers, --heads, --width"},
      {"--image-shape", "a text is no image"},
  };
  return flags;
}

}  // namespace

void TextTraining::add_flags(CLI::App& a, bool clip_flag) {
  a.add_option("--text", f_.text,
               "language model (--dataset text): a UTF-8 text file to train on (default: Debian's fortunes); "
               "its other defaults: --arch gpt, --norm layer, --batch-size 16, --optimizer adamw with lr 0.001, "
               "betas 0.9,0.95 and weight decay 0.1 on 2-D weights only, --warmup a tenth of --steps, "
               "--val-fraction 0.1")
      ->check(non_empty());
  a.add_option("--block-size", f_.block_size, "language model: context length in characters")
      ->check(whole(1, 1 << 16))
      ->capture_default_str();
  a.add_option("--layers", f_.layers, "language model: transformer blocks (--arch lstm: LSTM layers, default 1)")
      ->check(whole(1, 1024))
      ->capture_default_str();
  a.add_option("--heads", f_.heads, "language model: attention heads (divide --width)")
      ->check(whole(1, 1 << 16))
      ->capture_default_str();
  a.add_option("--width", f_.width, "language model: embedding width (nanoGPT's n_embd; --arch lstm: default 64)")
      ->check(whole(1, 1 << 20))
      ->capture_default_str();
  a.add_option("--position", f_.position, "language model: norm position, pre (GPT-2) or post (the original Transformer)")
      ->check(CLI::IsMember({"pre", "post"}))
      ->capture_default_str();
  a.add_option("--steps", f_.steps,
               "language model: training steps (the default GPT on the fortunes: about 0.08 s a step on one core)")
      ->check(whole(1, kMaxInt))
      ->capture_default_str();
  if (clip_flag)
    a.add_option("--clip-grad-norm", f_.clip_grad_norm, "language model: clip the total gradient norm to this (0: off)")
        ->check(non_negative())
        ->capture_default_str();
}

void TextTraining::presets(TrainingOptions& o, const Given& given) {
  preset_text(o, given, f_.steps, TextKind::Train);
  refuse(o, given, false);
}

void TextTraining::refuse(const TrainingOptions& o, const Given& given, bool resumable) const {
  const std::string& arch = o.train.model.arch;
  if (arch != "gpt" && arch != "lstm")
    throw Error("--arch " + arch + " does not train on --dataset text: a character language model is --arch gpt "
                "or lstm");
  for (const auto& [flag, why] : not_for_text())
    if (given(flag) && !(resumable && flag == "--resume")) throw Error(flag + " does not apply to --dataset text: " + why);
}

void TextTraining::check(TrainingOptions& o, const std::string& norm, const Given& given) {
  TrainConfig& t = o.train;
  preset_text_optimizer(t, given);
  model_.arch = t.model.arch;
  model_.block_size = f_.block_size;
  if (model_.arch == "gpt") check_gpt(o, norm, given);
  else check_lstm(o, norm, given);
  t.model.norm = model_.arch == "gpt" ? nn::block_norm_name(model_.gpt.norm) : "none";
  if (t.warmup_steps >= f_.steps)
    throw Error("--warmup " + std::to_string(t.warmup_steps) + " must be below --steps " + std::to_string(f_.steps));
}

void TextTraining::check_gpt(const TrainingOptions&, const std::string& norm, const Given& given) {
  if (given("--hidden"))
    throw Error("--hidden goes with --arch mlp or lstm, not --arch gpt (--width sets its embedding width)");
  model_.gpt.norm = gpt_norm(preset_text_norm(norm, given));
  model_.gpt.position = nn::parse_norm_position(f_.position);
  model_.gpt.n_layer = f_.layers;
  model_.gpt.n_head = f_.heads;
  model_.gpt.width = f_.width;
  if (f_.width % f_.heads != 0)
    throw Error("--heads " + std::to_string(f_.heads) + " must divide --width " + std::to_string(f_.width));
}

void TextTraining::check_lstm(const TrainingOptions& o, const std::string& norm, const Given& given) {
  for (const char* flag : {"--heads", "--position"})
    if (given(flag)) throw Error(std::string(flag) + " goes with --arch gpt, not --arch lstm (a CharLSTM has no attention)");
  if (given("--norm") && norm != "none")
    throw Error("--norm " + norm + " does not fit --arch lstm on --dataset text: nn::CharLSTM has no norm (--norm none)");
  const std::vector<int64_t>& hidden = o.train.model.hidden;
  if (given("--hidden") && hidden.size() != 1)
    throw Error("--hidden takes one width with --arch lstm on --dataset text (--layers sets the number of layers), got " +
                std::to_string(hidden.size()) + " widths");
  preset_text_lstm(model_, hidden, f_.layers, f_.width, given);
}

void TextTraining::check(TrainingOptions& o, const Given& given) {
  o.train.seed = *bound_.seed;  // the flow of tables sets it per run in make_plan; this one trains o.train
  check(o, *bound_.norm, given);
}

void TextTraining::plan(const TrainingOptions& o) {
  const double f = o.data.validation_fraction;
  studies::LmPlan p;
  p.corpus = f_.text.empty() ? data::load_default_corpus(f_.block_size, f) : data::load_text_corpus(f_.text, f_.block_size, f);
  p.config.model = model_;
  p.config.model.vocab_size = p.corpus.vocabulary.size();
  p.config.train = o.train;
  p.config.steps = f_.steps;
  p.config.clip_grad_norm = f_.clip_grad_norm;
  check_lm_config(p.config);
  check_lm_probes(p.config, p.corpus);
  if (p.config.model.arch == "gpt" && nn::has_batch_statistics(p.config.model.gpt.norm) &&
      o.train.batch_size * f_.block_size < 2)
    throw Error("--norm " + nn::block_norm_name(p.config.model.gpt.norm) + " normalizes over the --batch-size x --block-size tokens: a batch of 1 x 1 token has no "
                "variance (give --block-size 2 or more)");
  plan_ = std::move(p);
}

int TextTraining::run(const TrainingOptions& o, const nlohmann::json& settings, const Invocation& inv) {
  install_interrupt_handler();
  ResultSet set(o.out);
  StudyContext ctx;
  ctx.out = set.dir();
  ctx.quiet = o.quiet;
  ctx.command_line = inv.text();
  ctx.dataset = plan_->corpus.name;
  ctx.settings = settings;
  Report rep;
  try {
    rep = studies::run_lm_train(*plan_, ctx);
  } catch (const Error& e) {  // a file that cannot be written: named in --out, not the hidden folder
    throw Error(set.in_user_terms(e.what()));
  }
  set.commit();
  std::printf("normlab: results in %s\n", o.out.c_str());
  return run_exit_status(rep.interrupted, rep.diverged,
                         "normlab: interrupted: the steps done and the model at the interruption are in " + o.out + "\n");
}

}  // namespace normlab::experiments::commands
