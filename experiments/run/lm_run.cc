// One run of a character language model (lm_run.h): its task for the shared training step,
// nanoGPT's optimizer groups, the loop over its steps with its evaluations, and the sample.
#include "experiments/run/lm_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <regex>

#include "autograd/loss.h"
#include "autograd/shape_ops.h"
#include "base/error.h"
#include "experiments/models/language_model.h"
#include "experiments/models/size_limits.h"
#include "experiments/registry/optimizers.h"
#include "experiments/run/landscape.h"
#include "experiments/run/loop.h"
#include "experiments/run/step.h"
#include "experiments/run/trainer.h"
#include "experiments/support/interrupt.h"

namespace normlab::experiments {

using autograd::Tensor;

namespace {

// The language models' task of train_step (step.h): the model's logits (B, T, V) of a batch of
// windows and their cross-entropy against the next characters.
struct LmStepTask {
  using Batch = data::TextBatch;
  struct Forward {
    Tensor loss;
  };
  CharModel& m;
  int64_t vocab_size;
  std::vector<StepRecord>& steps;  // every step's record, a diverged one too
  RunProbes* probes = nullptr;     // the landscape probes, when the run has them
  RunResult* result = nullptr;     // where they record

  void step_begin() {
    if (probes) probes->step_begin(static_cast<int64_t>(steps.size()), *result);
  }
  Forward forward(const data::TextBatch& b) {
    const int64_t bt = b.batch_size * b.block_size;
    const Tensor logits = m.forward(b.x, {b.batch_size, b.block_size});
    return {autograd::cross_entropy(autograd::reshape(logits, {bt, vocab_size}), b.y)};
  }
  double loss_value(const Forward& f) const { return f.loss.item(); }
  void after_backward() {}
  void step_end(const data::TextBatch& b, const Forward&, const StepOutcome& s) {
    const auto step = static_cast<int64_t>(steps.size());
    steps.push_back({step, 1, s.lr, s.loss, s.grad_norm});  // one epoch of steps
    if (probes) probes->step_end(step, s.lr, s.loss, [&] { return forward(b).loss; }, *result);
  }
};

// nanoGPT's two groups of m's parameters: [decayed (dim >= 2: Linear weights, embeddings), not
// decayed (biases, norm weights; weight decay 0)], each c's optimizer; the total gradient norm
// clipped to `clip` (and measured when 0: the steps' grad_norm).
Optimization lm_optimization(const TrainConfig& c, const nn::Module& m, int64_t steps, double clip) {
  std::vector<Tensor> decay, no_decay;
  const std::vector<Tensor> params = m.parameters();
  for (const Tensor& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  TrainConfig plain = c;
  plain.weight_decay = 0;
  std::vector<std::unique_ptr<optim::Optimizer>> groups;
  groups.push_back(make_optimizer(c, decay));
  if (!no_decay.empty()) groups.push_back(make_optimizer(plain, no_decay));
  return make_optimization(std::move(groups), schedule_of(c, steps), params, clip, /*measure_norm=*/true);
}

// The GPT's layers of the internal covariate shift: the embeddings (wte, wpe), each transformer
// block with its norms (attention, MLP, ln_1, ln_2), and the final norm with the output head.
std::vector<ParamLayer> gpt_layers(const nn::Module& m) {
  std::vector<ParamLayer> layers;
  const std::regex block(R"(transformer\.h\.(\d+)\..*)");
  for (const auto& [name, t] : m.named_parameters()) {
    std::smatch k;
    const std::string layer = std::regex_match(name, k, block)   ? "block " + std::to_string(std::stoi(k[1]) + 1)
                              : name.rfind("transformer.w", 0) == 0 ? "embeddings"
                                                                      : "final norm and head";
    if (layers.empty() || layers.back().name != layer) layers.push_back({layer, {}});
    layers.back().params.push_back(t);
  }
  return layers;
}

// One evaluation after `step` steps over the first max_windows windows (0: every one).
EvalRecord evaluate(CharModel& m, const LmRunSpec& s, const LmRunRules& rules, int64_t step, int64_t max_windows) {
  const LmTrainConfig& c = s.config;
  const std::vector<int64_t>& ids = s.corpus->validation;
  const int64_t all = data::sequential_windows(static_cast<int64_t>(ids.size()), c.model.block_size);
  EvalRecord e;
  e.step = step;
  e.windows = max_windows > 0 ? std::min(all, max_windows) : all;
  e.all = e.windows == all;
  e.val_loss = window_loss(m, ids, c.model.block_size, c.train.batch_size, max_windows);
  if (rules.train_mode_eval && nn::has_batch_statistics(c.model.gpt.norm))
    e.val_loss_train_mode = train_mode_window_loss(m, ids, c.model.block_size, c.train.batch_size, max_windows);
  return e;
}

// The report's sample: kLmSample's prompt, or the training split's first character when the
// vocabulary lacks a character of it.
void add_sample(CharModel& m, const data::TextCorpus& corpus, RunResult& r) {
  const data::Vocabulary& v = corpus.vocabulary;
  const std::u32string prompt = data::decode_utf8(kLmSample.prompt, "the sample prompt");
  const bool known = std::all_of(prompt.begin(), prompt.end(), [&](char32_t c) { return v.contains(c); });
  r.sample_prompt = known ? kLmSample.prompt : data::encode_utf8(std::u32string(1, v.character(corpus.train.front())));
  SamplingOptions o;
  o.temperature = kLmSample.temperature;
  r.sample = generate_text(m, v, r.sample_prompt, kLmSample.length, o, kLmSample.seed);
}

// A language model's run as run_loop drives it (loop.h): one epoch of its steps, each on the
// random batch of its index, the evaluations and Ctrl-C of its rules.
struct LmLoopRun {
  using Task = LmStepTask;
  const LmRunSpec& s;
  const LmRunRules& rules;
  LmStepTask step;
  RunResult& r;
  const std::function<void(const RunResult&)>& on_step;
  int64_t every;  // evaluate every this many steps (0: never)

  Task& task() { return step; }
  int64_t epochs() const { return 1; }
  int64_t batches() const { return s.config.steps; }
  void epoch_begin(const LoopPosition&) {}
  data::TextBatch batch(const LoopPosition& p) const {
    const LmTrainConfig& c = s.config;
    return data::random_batch(s.corpus->train, c.train.batch_size, c.model.block_size, c.train.seed, p.step);
  }
  void step_done(const LoopPosition& p) {
    if (every > 0 && p.step % every == 0 && (rules.eval_at_last_step || p.step < s.config.steps))
      r.evals.push_back(evaluate(step.m, s, rules, p.step, kLmEvalWindows));
    if (on_step) on_step(r);
  }
  bool stop_asked(const LoopPosition& p) const {
    return (rules.interruptible_last_step || p.step < s.config.steps) && interrupted();
  }
  bool epoch_end(const LoopPosition&) { return false; }
};

}  // namespace

LmRunRules lm_study_rules(const LmRunSpec& s) {
  return {.eval_every = s.periodic ? s.config.train.eval_every : 0, .train_mode_eval = true};
}

RunResult train_lm_run(const LmRunSpec& s, const LmRunRules& rules,
                         const std::function<void(const RunResult&)>& on_step, std::shared_ptr<CharModel>* model_out) {
  const auto start = std::chrono::steady_clock::now();
  const LmTrainConfig& c = s.config;
  RunResult r = lm_result_of(s);
  autograd::Generator gen(c.train.seed);
  auto m = std::make_shared<CharModel>(c.model, gen);
  r.parameters = m->module().num_parameters();
  m->module().train();
  Optimization opt = lm_optimization(c.train, m->module(), c.steps, c.clip_grad_norm);
  const bool has_val = !s.corpus->validation.empty();
  LmLoopRun run{s, rules, {*m, c.model.vocab_size, r.steps}, r, on_step, has_val ? rules.eval_every : 0};
  // The landscape probes: the probe batch of the curvature is the training split's first
  // curvature_samples windows (sequential_batch 0).
  std::optional<data::TextBatch> probe_batch;
  std::optional<RunProbes> probes;
  if (c.train.probe_every > 0 || c.train.curvature_samples > 0) {
    if (c.train.curvature_samples > 0)
      probe_batch = data::sequential_batch(s.corpus->train, c.train.curvature_samples, c.model.block_size, 0);
    probes.emplace(m->module(), gpt_layers(m->module()), c.train, c.steps,
                   [&] { return run.step.forward(*probe_batch).loss; });
    run.step.probes = &*probes, run.step.result = &r;
  }
  LoopPosition p;
  const LoopEnd end = run_loop(run, opt, p);
  r.diverged = end == LoopEnd::Diverged;
  r.interrupted = end == LoopEnd::Interrupted;
  if (has_val && !r.diverged && (!r.interrupted || rules.final_after_interrupt)) {
    r.evals.push_back(evaluate(*m, s, rules, static_cast<int64_t>(r.steps.size()), 0));
    if (s.sample) add_sample(*m, *s.corpus, r);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (model_out) *model_out = std::move(m);
  return r;
}

double train_mode_window_loss(CharModel& m, const std::vector<int64_t>& ids, int64_t block_size, int64_t batch,
                              int64_t max_windows) {
  return window_loss(m, ids, block_size, batch, max_windows, /*train_mode=*/true);
}

void check_lm_probes(const LmTrainConfig& c, const data::TextCorpus& corpus) {
  const TrainConfig& t = c.train;
  if (t.probe_every < 0) throw Error("--probe-every must be 0 (off) or a number of steps");
  if (t.curvature_samples < 0) throw Error("--curvature-samples must be 0 (off) or a number of training windows");
  if (t.probe_every == 0 && t.curvature_samples == 0) return;
  if (c.model.arch != "gpt")
    throw Error("the landscape probes (--probe-every, --curvature-samples) of a language model measure the GPT's "
                "blocks: give --arch gpt, not --arch " + c.model.arch);
  const int64_t windows = data::sequential_windows(static_cast<int64_t>(corpus.train.size()), c.model.block_size);
  if (t.curvature_samples > windows)
    throw Error("--curvature-samples " + std::to_string(t.curvature_samples) + " is more than the training split's " +
                std::to_string(windows) + " windows of --block-size " + std::to_string(c.model.block_size));
  if (t.curvature_samples > 0 && (t.curvature_iters < 1 || !(t.curvature_tol > 0) || t.trace_samples < 1))
    throw Error("the curvature needs at least one power iteration, a tolerance above 0 and at least one trace sample");
}

void check_lm_config(const LmTrainConfig& c, const CharModelFlags& flags) {
  if (c.steps < 1) throw Error("--steps must be at least 1, got " + std::to_string(c.steps));
  if (c.train.warmup_steps >= c.steps)
    throw Error("--warmup " + std::to_string(c.train.warmup_steps) + " must be below --steps " + std::to_string(c.steps));
  if (c.clip_grad_norm < 0) throw Error("--clip-grad-norm must be >= 0 (0: no clipping)");
  check_char_model_size(c.model, c.train.batch_size, flags);  // before anything is allocated
  const OptimizerEntry& o = optimizer(c.train.optimizer);
  if (o.check) o.check(c.train);
  const ScheduleEntry& sched = schedule(c.train.schedule);  // throws for an unknown name
  if (sched.check) sched.check(c.train);                     // the schedule's own rules, naming its flags
  schedule_of(c.train, c.steps);
}

}  // namespace normlab::experiments
