// `normlab train --dataset text`: a character language model's training run (run/lm_run.h) and
// its outputs (lm_train.h).
#include "experiments/studies/lm_train.h"

#include <chrono>
#include <cmath>
#include <span>
#include <sstream>

#include "autograd/loss.h"
#include "autograd/shape_ops.h"
#include "base/error.h"
#include "experiments/models/language_model.h"
#include "experiments/records/records.h"
#include "experiments/registry/optimizers.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/run/lm_run.h"
#include "experiments/support/git_commit.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/output.h"
#include "experiments/support/progress.h"
#include "nn/checkpoint.h"

namespace normlab::experiments::studies {

using autograd::Tensor;

namespace {

// A train run as its outputs read it: its records (evals: the periodic ones, then the final one
// over every validation window when `final`) and its model.
struct LmRun {
  RunResult r;
  std::shared_ptr<CharModel> model;
  bool final = false;  // evaluated over every window (not without a validation split, not diverged)
  // That evaluation's loss (NaN: none).
  double val_loss() const { return final ? r.evals.back().val_loss : std::nan(""); }
  // The --eval-every evaluations.
  std::span<const EvalRecord> periodic() const { return {r.evals.data(), r.evals.size() - (final ? 1 : 0)}; }
};

// train's rules (run/lm_run.h): the periodic evaluations also after the last step, Ctrl-C during
// the last step an interruption, the final evaluation also after Ctrl-C; its progress bar and lines.
LmRun train_lm(const LmPlan& p, bool quiet) {
  const LmTrainConfig& c = p.config;
  const LmRunSpec spec{.config = c, .corpus = std::shared_ptr<const data::TextCorpus>(std::shared_ptr<void>(), &p.corpus)};
  const LmRunRules rules{.eval_every = c.train.eval_every,
                         .eval_at_last_step = true,
                         .interruptible_last_step = true,
                         .final_after_interrupt = true};
  Progress progress(c.steps, quiet);
  LmRun run;
  run.r = train_lm_run(
      spec, rules,
      [&](const RunResult& so_far) {
        const int64_t step = static_cast<int64_t>(so_far.steps.size());  // done
        const double loss = so_far.steps.back().loss;
        if (!so_far.evals.empty() && so_far.evals.back().step == step) {
          const double v = so_far.evals.back().val_loss;
          progress.line("step " + std::to_string(step) + ": train loss " + fmt(loss, 4) + ", validation loss " +
                        fmt(v, 4) + " nats (" + fmt(bits(v), 4) + " bits/char)");
        }
        progress.update(step, "step " + std::to_string(step) + " loss " + fmt(loss, 4));
      },
      &run.model);
  const RunResult& r = run.r;
  if (r.diverged) progress.line("diverged at step " + std::to_string(r.steps.size()) + " (loss is not finite)");
  progress.finish();
  // The final evaluation over every window is the last one, when there is one.
  run.final = !p.corpus.validation.empty() && !r.diverged;
  return run;
}

void write_tables(const LmRun& run, int64_t eval_windows, const std::filesystem::path& out) {
  CsvTable steps({"step", "loss", "lr", "grad_norm"});
  for (const StepRecord& s : run.r.steps)
    steps.add_row({std::to_string(s.step + 1), fmt(s.loss), fmt(s.lr), fmt(s.grad_norm)});
  steps.write(out / "steps.csv");
  CsvTable evals({"step", "val_loss", "val_bits_per_char", "windows"});
  for (const EvalRecord& e : run.periodic())
    evals.add_row({std::to_string(e.step), fmt(e.val_loss), fmt(bits(e.val_loss)), std::to_string(eval_windows)});
  if (std::isfinite(run.val_loss()) && !run.r.steps.empty())
    evals.add_row({std::to_string(run.r.steps.size()), fmt(run.val_loss()), fmt(bits(run.val_loss())), "all"});
  evals.write(out / "evals.csv");
}

// The training loss per step and the validation loss at the evaluations, in nats: loss_curve.png/.svg.
std::vector<std::string> lm_plots(const LmRun& run, const std::filesystem::path& out) {
  if (!report::gnuplot_available() || run.r.steps.empty()) return {};
  report::PlotSpec loss{"Training and validation loss", "step", "cross-entropy (nats per character)"};
  loss.log_y = report::LogY::if_wide;
  loss.dense = true;
  report::Series t{"train (batch)"}, v{"validation"};
  for (const StepRecord& s : run.r.steps)
    if (std::isfinite(s.loss)) t.x.push_back(double(s.step + 1)), t.y.push_back(s.loss);
  for (const EvalRecord& e : run.periodic()) v.x.push_back(double(e.step)), v.y.push_back(e.val_loss);
  loss.series = {t};
  if (!v.x.empty()) loss.series.push_back(v);
  return report::render_plot(loss, out, "loss_curve") ? std::vector<std::string>{"loss_curve"} : std::vector<std::string>{};
}

std::map<std::string, std::string> checkpoint_of(const LmPlan& p, const LmRun& run) {
  const RunResult& r = run.r;
  auto md = lm_metadata(p.config.model, p.corpus.vocabulary, p.corpus.name, p.corpus.validation_fraction);
  md["normlab"] = NORMLAB_VERSION;
  md["git_commit"] = git_commit();
  md["format"] = "pt";
  md["steps"] = std::to_string(r.steps.size());
  md["seed"] = std::to_string(p.config.train.seed);
  md["eval_batch"] = std::to_string(p.config.train.batch_size);
  if (std::isfinite(run.val_loss())) md["val_loss"] = fmt(run.val_loss());
  if (r.interrupted) md["interrupted"] = "true", md["planned_steps"] = std::to_string(p.config.steps);
  md["repr"] = run.model->module().str();
  return md;
}

std::string corpus_text(const data::TextCorpus& c) {
  std::ostringstream s;
  s << "- Corpus: " << (c.name == "fortunes" ? "fortunes (Debian's fortune files, " + std::string(data::kFortunesDir) + ")"
                                              : "`" + c.name + "`")
    << ", " << c.characters << " characters, vocabulary of " << c.vocabulary.size()
    << " characters (the training split's)\n- Split: the first " << c.train.size() << " characters train, the last "
    << (c.characters - static_cast<int64_t>(c.train.size())) << " validate (--val-fraction " << fmt(c.validation_fraction)
    << ", contiguous)";
  if (c.skipped > 0) s << "; " << c.skipped << " validation characters outside the vocabulary left out";
  s << "\n";
  return s.str();
}

std::string lm_markdown(const LmPlan& p, const LmRun& run, const std::vector<std::string>& plots) {
  const LmTrainConfig& c = p.config;
  const RunResult& r = run.r;
  std::ostringstream md;
  md << corpus_text(p.corpus) << "- Model: " << run.model->describe() << ", " << run.model->module().num_parameters()
     << " parameters\n"
     << "- Training: " << r.steps.size() << " of " << c.steps << " steps, batch " << c.train.batch_size << ", "
     << optimizer_text(c.train, true) << " (weight decay on 2-D weights only), warmup " << c.train.warmup_steps
     << " steps then " << c.train.schedule << ", gradient clipping at "
     << (c.clip_grad_norm > 0 ? fmt(c.clip_grad_norm) : std::string("none")) << ", seed " << c.train.seed << ", "
     << format_duration(r.seconds) << "\n";
  if (std::isfinite(run.val_loss()))
    md << "\n**Final validation loss: " << fmt(run.val_loss(), 5) << " nats per character = " << fmt(bits(run.val_loss()), 5)
       << " bits per character** (every non-overlapping window of the validation split).\n";
  if (r.interrupted) md << "\nCtrl-C stopped the run after " << r.steps.size() << " steps.\n";
  md << "\n" << report::image_links(plots)
     << (r.diverged ? "The run diverged: its weights are in `model.diverged.safetensors`, not a usable model.\n"
                    : "The model is in `model.safetensors` (nanoGPT's state_dict names); `normlab generate "
                      "--checkpoint model.safetensors --prompt ...` samples from it.\n");
  return md.str();
}

}  // namespace

Report run_lm_train(const LmPlan& plan, const StudyContext& ctx) {
  const LmRun run = train_lm(plan, ctx.quiet);
  const RunResult& r = run.r;
  const int64_t windows = data::sequential_windows(static_cast<int64_t>(plan.corpus.validation.size()),
                                                   plan.config.model.block_size);
  write_tables(run, std::min(windows, kLmEvalWindows), ctx.out);
  nn::save_module((ctx.out / (r.diverged ? "model.diverged.safetensors" : "model.safetensors")).string(),
                  run.model->module(), checkpoint_of(plan, run));
  Report rep{"Training run: character language model", lm_markdown(plan, run, lm_plots(run, ctx.out)), r.diverged};
  rep.interrupted = r.interrupted;
  nlohmann::json config = {{"arch", plan.config.model.arch},
                           {"steps", plan.config.steps},
                           {"clip_grad_norm", plan.config.clip_grad_norm},
                           {"checkpoint", lm_metadata(plan.config.model, plan.corpus.vocabulary, plan.corpus.name,
                                                      plan.corpus.validation_fraction)},
                           {"train", to_json(plan.config.train)}};
  nlohmann::json man = report::manifest(ctx, {{"study", "train"}, {"config", config}}, r.seconds);
  man["interrupted"] = r.interrupted;
  man["val_loss"] = std::isfinite(run.val_loss()) ? nlohmann::json(run.val_loss()) : nlohmann::json();
  report::write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments::studies
