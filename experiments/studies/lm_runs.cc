// The runs of the GPT normalization studies: variants, one run with its evaluations and sample,
// and the runs of a study in turn (lm_runs.h).
#include "experiments/studies/lm_runs.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "autograd/engine.h"
#include "autograd/loss.h"
#include "autograd/parallel.h"
#include "autograd/shape_ops.h"
#include "base/error.h"
#include "dist/dist.h"
#include "experiments/models/language_model.h"
#include "experiments/records/gather_runs.h"
#include "experiments/registry/optimizers.h"
#include "experiments/report/report.h"
#include "experiments/studies/lm_records.h"
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

// Trains one run, calling on_step(steps done) after every step.
LmRunResult train_one(const LmRunSpec& s, const std::function<void(int64_t)>& on_step) {
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

// "validation 2.345 bits/char (train mode 2.101), 12.3 s" or "diverged at step 40, 1.2 s".
std::string outcome(const LmRunResult& r) {
  std::string text;
  if (const LmEvalPoint* e = r.final_eval()) {
    text = "validation " + fmt(bits(e->val_loss), 4) + " bits/char";
    if (std::isfinite(e->val_loss_train_mode)) text += " (train mode " + fmt(bits(e->val_loss_train_mode), 4) + ")";
  } else {
    text = "diverged at step " + std::to_string(r.steps.size());
  }
  return text + ", " + fmt(r.seconds, 3) + " s";
}

// The runs of one call to train_lm_runs, claimed in order by one or more worker threads; their
// progress and outcome are reported under one lock.
class LmQueue {
 public:
  // Trains runs first, first + stride, ... (an mpirun job's rank and size; 0 and 1 otherwise).
  LmQueue(const std::vector<LmRunSpec>& specs, bool quiet, const std::string& command,
          const std::vector<nlohmann::json>& previous, LmJournal* journal, size_t first, size_t stride)
      : specs_(specs), command_(command), previous_(previous), journal_(journal),
        progress_(total_steps(specs, first, stride), quiet), finished_(specs.size()), steps_done_(specs.size(), 0),
        next_(first), stride_(stride) {}

  // Claims and trains runs until none is left, Ctrl-C came or a run threw.
  void work() {
    for (;;) {
      size_t i = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (error_ || interrupted() || next_ >= specs_.size()) return;
        i = next_;
        next_ += stride_;
      }
      try {
        train(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
        return;
      }
    }
  }

  // The runs finished in order (up to the first that did not finish); rethrows a run's error. In an
  // mpirun job, every rank's runs first gathered (a collective).
  LmRuns finish() {
    progress_.finish();
    if (error_) std::rethrow_exception(error_);
    LmRuns runs;
    runs.total = specs_.size();
    runs.reused = reused_;
    if (dist::world_size() > 1) {
      gather();
      double reused = static_cast<double>(reused_);
      dist::allreduce_sum(&reused, 1);
      runs.reused = static_cast<size_t>(reused);
    }
    for (size_t i = 0; i < finished_.size() && finished_[i] && !finished_[i]->interrupted; ++i)
      runs.results.push_back(std::move(*finished_[i]));
    runs.wall_seconds = progress_.elapsed_seconds();
    return runs;
  }

 private:
  static int64_t total_steps(const std::vector<LmRunSpec>& specs, size_t first, size_t stride) {
    int64_t total = 0;
    for (size_t i = first; i < specs.size(); i += stride) total += specs[i].config.steps;
    return total;
  }

  // Every rank's finished runs, as their records (lm_records.h), to every rank (gather_runs.h):
  // each run was trained on one process, so the results are those of one process training them all.
  void gather() {
    gather_runs_of_ranks(
        finished_, true, [this](size_t i, const LmRunResult& r) { return lm_records_json(specs_[i], r); },
        [this](size_t i, const nlohmann::json& j) { return stored_lm_run(j, specs_[i]); });
  }

  void train(size_t i) {
    const std::string label = lm_run_label(command_, specs_[i]);
    const auto on_step = [&](int64_t done) {
      std::lock_guard<std::mutex> lock(mu_);
      steps_done_[i] = done;
      int64_t sum = 0;
      for (int64_t d : steps_done_) sum += d;
      progress_.update(sum, label);
    };
    std::optional<LmRunResult> kept = i < previous_.size() ? stored_lm_run(previous_[i], specs_[i]) : std::nullopt;
    LmRunResult r = kept ? std::move(*kept) : train_one(specs_[i], on_step);
    if (kept) on_step(specs_[i].config.steps);
    std::lock_guard<std::mutex> lock(mu_);
    if (!r.interrupted) {
      if (journal_) journal_->append(i, specs_[i], r);  // durable before it is reported
      progress_.line(label + ": " + outcome(r) + (kept ? " (from the earlier records)" : ""));
      reused_ += kept ? 1 : 0;
    }
    finished_[i] = std::move(r);
  }

  const std::vector<LmRunSpec>& specs_;
  std::string command_;
  const std::vector<nlohmann::json>& previous_;
  LmJournal* journal_;
  Progress progress_;
  std::mutex mu_;  // guards everything below
  std::vector<std::optional<LmRunResult>> finished_;
  std::vector<int64_t> steps_done_;
  size_t next_ = 0, stride_ = 1, reused_ = 0;
  std::exception_ptr error_;
};

}  // namespace

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

LmRuns train_lm_runs(const std::vector<LmRunSpec>& specs, bool quiet, const std::string& command,
                     const std::vector<nlohmann::json>& previous, LmJournal* journal) {
  // In an mpirun job each rank trains every W-th run from its rank on; rank 0 journals its own.
  const size_t rank = static_cast<size_t>(dist::rank()), ranks = static_cast<size_t>(dist::world_size());
  LmQueue queue(specs, quiet, command, previous, rank == 0 ? journal : nullptr, rank, ranks);
  // With T kernel threads, T runs train side by side, one thread each (the same bits as one after
  // another: the kernels' results do not depend on the thread count); a batch-1 step gains little
  // from a second thread, a second run gains nearly twice.
  const int workers = static_cast<int>(std::min<size_t>(static_cast<size_t>(autograd::num_threads()), specs.size()));
  if (workers <= 1) {
    queue.work();
  } else {
    const int saved = autograd::num_threads();
    autograd::set_num_threads(1);
    std::vector<std::thread> helpers;
    for (int t = 1; t < workers; ++t) helpers.emplace_back([&queue] { queue.work(); });
    queue.work();
    for (auto& h : helpers) h.join();
    autograd::set_num_threads(saved);
  }
  return queue.finish();
}

}  // namespace normlab::experiments::studies
