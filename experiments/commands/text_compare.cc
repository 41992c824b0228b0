// `normlab compare` and `normlab sweep` with --dataset text: the GPT norm studies' flags, checks and
// run (text_compare.h; their presets: presets.h, the text family).
#include "experiments/commands/text_compare.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <system_error>

#include "dist/dist.h"
#include "experiments/commands/cli.h"
#include "experiments/commands/flags.h"
#include "experiments/commands/presets.h"
#include "experiments/commands/resume.h"
#include "experiments/records/rank_scratch.h"
#include "experiments/records/result_set.h"
#include "experiments/registry/layers.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/output.h"

namespace normlab::experiments::commands {

namespace fs = std::filesystem;

namespace {

std::string variant_list() {
  std::string names;
  for (const std::string& v : studies::gpt_variant_names()) names += (names.empty() ? "" : ", ") + v;
  return names;
}

}  // namespace

CLI::Validator norm_or_gpt_variant() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        for (const NormEntry& e : norms())
          if (e.name == s) return "";
        if (studies::is_gpt_variant(s)) return "";
        return "unknown norm '" + s + "' (expected one of: " + norm_names() + "; with --dataset text --arch gpt: " +
               variant_list() + ")";
      },
      "");
}

void refuse_gpt_variants(const std::vector<std::string>& names, const std::string& dataset) {
  if (dataset == "text") return;
  for (const std::string& n : names) {
    const bool registered = std::any_of(norms().begin(), norms().end(), [&](const NormEntry& e) { return e.name == n; });
    if (!registered)
      throw Error("--norms " + n + " is a GPT variant: it goes with --dataset text --arch gpt (the dataset is '" +
                  dataset + "'; its norms: " + norm_names() + ")");
  }
}

void TextStudy::add_flags(CLI::App& a) {
  text_.add_flags(a, /*clip_flag=*/false);  // compare and sweep have --clip-grad-norm for every arch
  if (kind_ == Kind::Sweep)
    a.add_option("--train-tokens", train_tokens_,
                 "language model (--dataset text): training tokens (characters) of every run, at every batch size: "
                 "steps = round(tokens / (batch x --block-size)); the default, the full protocol's, is 4000 steps of "
                 "batch 16 x block 64 (four times train's default run); its --batch-sizes default to 1,2,4,16,64 "
                 "(sequences)")
        ->check(whole(1, std::numeric_limits<int64_t>::max()))
        ->capture_default_str();
}

void TextStudy::presets(TrainingOptions& o, const Given& given) {
  preset_text(o, given, text_.flags().steps, kind_ == Kind::Sweep ? TextKind::Sweep : TextKind::Compare);
  text_.refuse(o, given, true);
  if (given("--position"))
    throw Error("--position does not apply to " + std::string(kind_ == Kind::Sweep ? "sweep" : "compare") +
                " --dataset text: each of --norms names its position (" + variant_list() + ")");
  if (kind_ == Kind::Sweep) {
    refuse_sweep_flags(given);
    return;
  }
  if (given("--target")) throw Error("--target does not apply to --dataset text: a language model has no accuracy");
}

void TextStudy::refuse_sweep_flags(const Given& given) const {
  const std::vector<std::pair<std::string, std::string>> flags{
      {"--lrs", "it sweeps the batch size only (--over batch)"},
      {"--reference-batch", "the learning rate is --lr at every batch size"},
      {"--lr-scaling", "the learning rate is --lr at every batch size"},
      {"--full", "--full is the Fashion-MNIST protocol; give --train-tokens, --batch-sizes, --seeds"},
      {"--ranks", "it trains in one process"},
      {"--batch-size", "every run trains at one of --batch-sizes"},
      {"--steps", "each run's steps follow from --train-tokens and its batch size"},
      {"--warmup", "each run warms up for a tenth of its steps"},
  };
  for (const auto& fw : flags)
    if (given(fw.first)) throw Error(fw.first + " does not apply to sweep --dataset text: " + fw.second);
}

void TextStudy::check(TrainingOptions& o, const std::vector<std::string>& norms, const std::vector<uint64_t>& seeds,
                      const std::vector<int64_t>& batch_sizes, const Given& given) {
  if (o.train.model.arch != "gpt")
    throw Error("--arch " + o.train.model.arch + " on --dataset text: " +
                (kind_ == Kind::Sweep ? "sweep" : "compare") + " compares the norms of --arch gpt (nn::CharLSTM has no norm)");
  text_.check(o, "layer", given);
  variants_ = preset_text_variants(norms, given);
  for (const std::string& v : variants_) studies::gpt_variant(v);  // throws naming the variants
  seeds_ = seeds;
  batch_sizes_ = preset_text_batches(batch_sizes, given);
}

void TextStudy::check(TrainingOptions& o, const Given& given) {
  if (bound_.over && *bound_.over != studies::SweepOver::Batch)
    throw Error("--over lr does not apply to --dataset text: it sweeps the batch size");
  check(o, *bound_.norms, *bound_.seeds, bound_.batch_sizes ? *bound_.batch_sizes : std::vector<int64_t>{}, given);
}

void TextStudy::plan(const TrainingOptions& o) {
  const TextFlags& f = text_.flags();
  const double vf = o.data.validation_fraction;
  auto corpus = std::make_shared<const data::TextCorpus>(
      f.text.empty() ? data::load_default_corpus(f.block_size, vf) : data::load_text_corpus(f.text, f.block_size, vf));
  LmTrainConfig base;
  base.model = text_.model();
  base.model.vocab_size = corpus->vocabulary.size();
  base.train = o.train;
  base.steps = f.steps;
  base.clip_grad_norm = o.train.clip_grad_norm;
  base.train.clip_grad_norm = 0;  // the language model's step clips (LmTrainConfig), not the classifier trainer
  if (kind_ == Kind::Compare) {
    compare_ = studies::LmCompareConfig{base, corpus, variants_, seeds_};
    specs_ = studies::lm_compare_runs(*compare_);
  } else {
    sweep_ = studies::LmSweepConfig{base, corpus, variants_, seeds_, batch_sizes_, train_tokens_};
    specs_ = studies::lm_sweep_runs(*sweep_);
  }
}

// In an mpirun job, a rank other than 0: its share of the runs (lm_runs.h), journaled into its own
// partial folder beside --out (rank_scratch.h), removed afterwards; rank 0 writes the results.
int TextStudy::run_other_rank(StudyContext ctx, const std::string& out, const fs::path& resume_from) {
  ctx.quiet = true;
  const RankScratch scratch(out);
  ctx.out = scratch.path();
  ctx.resume_from = resume_from;
  if (compare_) studies::run_lm_compare(*compare_, specs_, ctx);
  else studies::run_lm_sweep(*sweep_, specs_, ctx);
  return kExitOk;
}

int TextStudy::run(const TrainingOptions& o, const nlohmann::json& settings, const Invocation& inv) {
  install_interrupt_handler();
  const ResumeSources sources = o.resume ? resume_sources(o.out, "records.json", settings) : ResumeSources{};
  StudyContext ctx;
  ctx.resume_killed = sources.killed;
  ctx.quiet = o.quiet;
  ctx.command_line = inv.text();
  ctx.dataset = compare_ ? compare_->corpus->name : sweep_->corpus->name;
  ctx.settings = settings;
  if (dist::rank() != 0) return run_other_rank(ctx, o.out, sources.out ? output_folder(o.out) : fs::path());
  ResultSet set(o.out);
  ctx.out = set.dir();
  if (sources.out) ctx.resume_from = set.out();
  prepare_output_dir(ctx.out);
  Report rep;
  try {
    rep = compare_ ? studies::run_lm_compare(*compare_, specs_, ctx) : studies::run_lm_sweep(*sweep_, specs_, ctx);
  } catch (const Error& e) {  // a file that cannot be written: named in --out, not the hidden folder
    throw Error(set.in_user_terms(e.what()));
  }
  set.commit();
  std::printf("normlab: results in %s (report.md)\n", o.out.c_str());
  return run_exit_status(rep.interrupted, false,
                         "normlab: interrupted: " + std::to_string(rep.runs_done) + " of " +
                             std::to_string(rep.runs_total) + " runs finished, written to " + o.out + "\n");
}

}  // namespace normlab::experiments::commands
