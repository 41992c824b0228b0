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

// One evaluation at `step` over the first max_windows windows (0: every one).
LmEvalPoint evaluate(CharModel& m, const LmRunSpec& s, int64_t step, int64_t max_windows) {
  const LmTrainConfig& c = s.config;
  const std::vector<int64_t>& ids = s.corpus->validation;
  const int64_t all = data::sequential_windows(static_cast<int64_t>(ids.size()), c.model.block_size);
  LmEvalPoint e;
  e.step = step;
  e.windows = max_windows > 0 ? std::min(all, max_windows) : all;
  e.all = e.windows == all;
  e.val_loss = window_loss(m, ids, c.model.block_size, c.train.batch_size, max_windows);
  if (c.model.gpt.norm == nn::BlockNorm::Batch)
    e.val_loss_train_mode = train_mode_window_loss(m, ids, c.model.block_size, c.train.batch_size, max_windows);
  return e;
}

// The report's sample: kLmSample's prompt, or the training split's first character when the
// vocabulary lacks a character of it.
void add_sample(CharModel& m, const data::TextCorpus& corpus, LmRunResult& r) {
  const data::Vocabulary& v = corpus.vocabulary;
  const std::u32string prompt = data::decode_utf8(kLmSample.prompt, "the sample prompt");
  const bool known = std::all_of(prompt.begin(), prompt.end(), [&](char32_t c) { return v.contains(c); });
  r.sample_prompt = known ? kLmSample.prompt : data::encode_utf8(std::u32string(1, v.character(corpus.train.front())));
  SamplingOptions o;
  o.temperature = kLmSample.temperature;
  r.sample = generate_text(m, v, r.sample_prompt, kLmSample.length, o, kLmSample.seed);
}

LmRunResult result_of(const LmRunSpec& s) {
  const LmTrainConfig& c = s.config;
  LmRunResult r;
  r.variant = s.variant;
  r.seed = c.train.seed;
  r.batch_size = c.train.batch_size;
  r.block_size = c.model.block_size;
  r.steps_planned = c.steps;
  return r;
}

}  // namespace

LmRunResult train_lm_run(const LmRunSpec& s, const std::function<void(int64_t)>& on_step) {
  const auto start = std::chrono::steady_clock::now();
  const LmTrainConfig& c = s.config;
  LmRunResult r = result_of(s);
  autograd::Generator gen(c.train.seed);
  CharModel m(c.model, gen);
  r.parameters = m.module().num_parameters();
  m.module().train();
  auto groups = lm_optimizer_groups(c.train, m.module());
  const optim::Schedule sched = schedule_of(c.train, c.steps);
  const int64_t every = s.periodic ? c.train.eval_every : 0;
  for (int64_t step = 0; step < c.steps; ++step) {
    r.steps.push_back(lm_train_step(m, c, s.corpus->train, groups, sched, step));
    if (!std::isfinite(r.steps.back().loss)) {
      r.diverged = true;
      break;
    }
    if (every > 0 && (step + 1) % every == 0 && step + 1 < c.steps) r.evals.push_back(evaluate(m, s, step + 1, kLmEvalWindows));
    on_step(step + 1);
    count_step();
    if (step + 1 < c.steps && interrupted()) r.interrupted = true;
    if (r.interrupted) break;
  }
  if (!r.diverged && !r.interrupted) {
    r.evals.push_back(evaluate(m, s, c.steps, 0));
    if (s.sample) add_sample(m, *s.corpus, r);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
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

const LmEvalPoint* LmRunResult::final_eval() const {
  return !diverged && !interrupted && !evals.empty() && evals.back().all ? &evals.back() : nullptr;
}

double train_mode_window_loss(CharModel& m, const std::vector<int64_t>& ids, int64_t block_size, int64_t batch,
                              int64_t max_windows) {
  return window_loss(m, ids, block_size, batch, max_windows, /*train_mode=*/true);
}

void check_lm_run(const LmRunSpec& s) {
  LmPlan p;  // check_lm_plan reads the settings only
  p.config = s.config;
  check_lm_plan(p);
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
