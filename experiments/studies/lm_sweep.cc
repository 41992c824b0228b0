// `normlab sweep --dataset text --arch gpt --over batch`: runs, tables, plots and the reading
// (lm_sweep.h).
#include "experiments/studies/lm_sweep.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/error.h"
#include "experiments/records/records.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/studies/lm_outputs.h"
#include "experiments/studies/lm_runs.h"
#include "experiments/studies/study_runs.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

std::vector<std::string> batch_variants(const LmSweepConfig& cfg) {
  std::vector<std::string> v;
  for (const std::string& n : cfg.variants)
    if (variant_has_batch_statistics(n)) v.push_back(n);
  return v;
}

int64_t steps_at(const LmSweepConfig& cfg, int64_t batch) {
  return lm_sweep_steps(cfg.tokens, batch, cfg.base.model.block_size);
}

// steps.csv: norm, batch_size, seed, step, loss, lr, grad_norm of every training step of the runs
// at the example batch (lm_sweep_example_batch), those of the loss curves.
void write_steps_csv(const LmSweepConfig& cfg, const std::vector<RunResult>& results,
                     const std::filesystem::path& path) {
  CsvTable t({"norm", "batch_size", "seed", "step", "loss", "lr", "grad_norm"});
  const int64_t b = lm_sweep_example_batch(cfg.batch_sizes);
  for (const RunResult& r : results)
    if (r.config.batch_size == b)
      for (const StepRecord& s : r.steps)
        t.add_row({r.variant, std::to_string(b), std::to_string(r.config.seed), std::to_string(s.step + 1), fmt(s.loss),
                   fmt(s.lr), fmt(s.grad_norm)});
  t.write(path);
}

void write_summary_csv(const LmSweepConfig& cfg, const std::vector<RunResult>& results,
                       const std::filesystem::path& path) {
  std::vector<std::string> header{"norm", "block_norm", "position", "batch_size", "steps", "tokens", "runs", "diverged"};
  for (const char* e : {"val_bits_per_char", "val_bits_per_char_train_mode", "train_mode_gap_bits"})
    for (const std::string& c : interval_columns(e)) header.push_back(c);
  CsvTable t(header);
  for (const std::string& v : cfg.variants)
    for (int64_t b : cfg.batch_sizes) {
      const GptVariant g = gpt_variant(v);
      const LmFinals f = finals_of(results, v, b);
      const int64_t steps = steps_at(cfg, b);
      std::vector<std::string> row{v, nn::block_norm_name(g.norm), nn::norm_position_name(g.position), std::to_string(b),
                                   std::to_string(steps), std::to_string(steps * b * cfg.base.model.block_size),
                                   std::to_string(f.runs), std::to_string(f.diverged)};
      for (const std::vector<double>* x : {&f.eval, &f.train_mode, &f.gap})
        for (const std::string& c : interval_values(*x)) row.push_back(c);
      t.add_row(row);
    }
  t.write(path);
}

// A series over the batch sizes of one variant's `field` (mean over seeds, 95% CI).
Series batch_series(const LmSweepConfig& cfg, const std::vector<RunResult>& results, const std::string& v,
                    std::vector<double> LmFinals::*field) {
  Series s{variant_display(v)};
  s.style = variant_style(v);
  for (int64_t b : cfg.batch_sizes) add_mean_point(s, double(b), finals_of(results, v, b).*field);
  return s;
}

// The 1-gram baseline in bits per character (NaN when it was not computed): the scale of both
// batch plots. A model worse than the characters' frequencies alone (BatchNorm's eval mode at batch
// 1, say, where the running statistics never matched a batch) is drawn as an arrow off the scale,
// so that the others' differences of hundredths of a bit stay visible.
double unigram_bits(const std::vector<NgramBaseline>& baselines) {
  for (const NgramBaseline& b : baselines)
    if (b.n == 1) return b.bits;
  return NAN;
}

std::vector<std::string> sweep_plots(const LmSweepConfig& cfg, const std::vector<RunResult>& results,
                                     const std::vector<NgramBaseline>& baselines, const std::filesystem::path& out) {
  if (!gnuplot_available() || results.empty()) return {};
  const auto [lo, hi] = std::minmax_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end());
  const double scale = unigram_bits(baselines);
  PlotSpec bits{"Final validation loss vs batch size (same training tokens at every batch)", "batch size (sequences)",
                "validation bits per character"};
  bits.y_max = scale;
  bits.log_x = 2;
  bits.error_bars = true;
  for (const std::string& v : cfg.variants) bits.series.push_back(batch_series(cfg, results, v, &LmFinals::eval));
  for (const Series& line : baseline_lines(baselines, double(*lo), double(*hi))) bits.series.push_back(line);
  std::vector<std::string> plots;
  if (render_plot(bits, out, "val_bits_vs_batch")) plots.push_back("val_bits_vs_batch");
  PlotSpec gap{"BatchNorm: validation loss in train mode minus eval mode", "batch size (sequences)",
               "train-mode minus eval-mode bits per character"};
  gap.y_min = -scale, gap.y_max = scale;
  gap.log_x = 2;
  gap.error_bars = true;
  for (const std::string& v : batch_variants(cfg)) gap.series.push_back(batch_series(cfg, results, v, &LmFinals::gap));
  if (!gap.series.empty()) {
    Series zero{"no gap"};
    zero.x = {double(*lo), double(*hi)};
    zero.y = {0, 0};
    zero.style = {kGrey, 1, 2};
    gap.series.push_back(zero);
  }
  if (gap.series.size() > 1 && render_plot(gap, out, "bn_train_eval_gap")) plots.push_back("bn_train_eval_gap");
  const int64_t b = lm_sweep_example_batch(cfg.batch_sizes);
  PlotSpec loss = training_loss_plot(cfg.variants, results, steps_at(cfg, b), b);
  loss.title = "Training loss at batch " + std::to_string(b);
  if (render_plot(loss, out, "loss_curves")) plots.push_back("loss_curves");
  return plots;
}

// Rows: batch sizes (with their steps); columns: each variant, then each BatchNorm variant in train mode.
std::string results_table(const LmSweepConfig& cfg, const std::vector<RunResult>& results) {
  const std::vector<std::string> bn = batch_variants(cfg);
  std::ostringstream md;
  md << "| batch | steps";
  for (const std::string& v : cfg.variants) md << " | " << variant_display(v);
  for (const std::string& v : bn) md << " | " << variant_display(v) << ", train mode";
  md << " |\n|---|---";
  for (size_t i = 0; i < cfg.variants.size() + bn.size(); ++i) md << "|---";
  md << "|\n";
  for (int64_t b : cfg.batch_sizes) {
    md << "| " << b << " | " << steps_at(cfg, b);
    for (const std::string& v : cfg.variants) md << " | " << interval_cell(finals_of(results, v, b).eval, kBitsUnits);
    for (const std::string& v : bn) md << " | " << interval_cell(finals_of(results, v, b).train_mode, kBitsUnits);
    md << " |\n";
  }
  return md.str();
}

// One variant against its own best batch size (the lowest mean): the batch sizes distinguishably
// worse by Welch's t-test over seeds, with the difference, and those not distinguishable from it.
std::string variant_reading(const LmSweepConfig& cfg, const std::vector<RunResult>& results, const std::string& v) {
  std::vector<std::vector<double>> bits;
  std::vector<std::string> labels;
  for (int64_t b : cfg.batch_sizes) bits.push_back(finals_of(results, v, b).eval), labels.push_back(std::to_string(b));
  const Ranking r = rank_against_best(bits, kBitsUnits, /*lower_is_better=*/true);
  if (!r.found()) return capitalized(variant_display(v)) + ": no finished run. ";
  return capitalized(variant_display(v)) + ": lowest mean " + interval_cell(bits[r.best()], kBitsUnits) +
         " bits/char at batch " + labels[r.best()] + points_against_best(r, labels, "worse", cfg.seeds.size()) + ". ";
}

// Each BatchNorm variant's train-mode minus eval-mode gap at the smallest and the largest batch.
std::string gap_reading(const LmSweepConfig& cfg, const std::vector<RunResult>& results) {
  const auto [lo, hi] = std::minmax_element(cfg.batch_sizes.begin(), cfg.batch_sizes.end());
  std::ostringstream md;
  for (const std::string& v : batch_variants(cfg)) {
    const LmFinals small = finals_of(results, v, *lo), large = finals_of(results, v, *hi);
    if (!std::isfinite(mean_of(small.gap)) && !std::isfinite(mean_of(large.gap))) continue;
    md << capitalized(variant_display(v)) << ", train mode minus eval mode: " << gap_text(small.gap) << " at batch "
       << *lo;
    if (*hi != *lo) md << ", " << gap_text(large.gap) << " at batch " << *hi;
    md << ". ";
  }
  if (md.tellp() > 0) md << batch_gap_explanation() << " ";
  return md.str();
}

std::string rule_text(const LmSweepConfig& cfg) {
  const int64_t window = cfg.base.model.block_size;
  std::ostringstream md;
  md << "- Budget: " << cfg.tokens << " training tokens per run (--train-tokens) at every batch size: steps = round("
     << cfg.tokens << " / (batch x " << window << ")), so every run sees the same number of characters (within half a "
     << "batch); the warmup is a tenth of each run's steps, then " << cfg.base.train.schedule << "\n"
     << "- Learning rate: " << fmt(cfg.base.train.lr) << " at every batch size (not scaled with the batch: Adam's "
     << "step size does not grow with the batch as SGD's does, and a fixed rate keeps the norms' comparison at each "
     << "batch size on one setting); smaller batches take more, noisier steps\n"
     << "- " << count_of(static_cast<int64_t>(cfg.seeds.size()), "seed") << " per norm and batch size; the final "
     << "validation loss is over every window of the validation split, in batches of the run's batch size\n\n";
  return md.str();
}

std::string sweep_markdown(const LmSweepConfig& cfg, const std::vector<RunResult>& results,
                           const std::vector<NgramBaseline>& baselines, const std::vector<std::string>& plots) {
  std::ostringstream md;
  md << lm_setup_markdown(cfg.base, *cfg.corpus) << rule_text(cfg)
     << (cfg.seeds.size() > 1 ? "Cells: final validation bits per character, mean ± half-width of the 95% confidence "
                                "interval over the seeds (Student t).\n\n"
                              : "Cells: final validation bits per character (one seed: no intervals).\n\n")
     << results_table(cfg, results) << "\n" << image_links(plots) << "**Reading.** ";
  for (const std::string& v : cfg.variants) md << variant_reading(cfg, results, v);
  md << (cfg.seeds.size() > 1 ? "Differences are means over seeds with their 95% interval (Welch's t-test). " : "")
     << gap_reading(cfg, results) << "\n\n" << baselines_sentence(baselines) << "\n\n"
     << samples_markdown(results, "its first seed's model at batch " +
                                      std::to_string(lm_sweep_example_batch(cfg.batch_sizes)));
  return md.str();
}

}  // namespace

int64_t lm_sweep_example_batch(std::vector<int64_t> batch_sizes) {
  if (batch_sizes.empty()) throw Error("--batch-sizes: give at least one batch size");
  std::sort(batch_sizes.begin(), batch_sizes.end());
  return batch_sizes[(batch_sizes.size() - 1) / 2];
}

int64_t lm_sweep_steps(int64_t tokens, int64_t batch, int64_t block) {
  if (tokens < 1 || batch < 1 || block < 1) throw Error("lm_sweep_steps: tokens, batch and block must be positive");
  return std::max<int64_t>(1, std::llround(double(tokens) / (double(batch) * double(block))));
}

std::vector<LmRunSpec> lm_sweep_runs(const LmSweepConfig& cfg) {
  const LmRunFlags& f = cfg.flags;
  if (cfg.variants.empty()) throw Error(f.norms + ": give at least one norm");
  if (cfg.seeds.empty()) throw Error(f.seeds + ": give at least one seed");
  if (cfg.batch_sizes.empty()) throw Error(f.batch + ": give at least one batch size");
  if (!cfg.corpus || cfg.corpus->validation.empty())
    throw Error("--val-fraction 0 leaves no validation split: sweep --dataset text compares validation losses");
  if (cfg.tokens < cfg.base.model.block_size)
    throw Error(f.tokens + " " + std::to_string(cfg.tokens) + " is below one window of " + f.block + " " +
                std::to_string(cfg.base.model.block_size));
  std::vector<LmRunSpec> specs;
  for (const std::string& v : cfg.variants) {
    const GptVariant g = gpt_variant(v);
    for (int64_t b : cfg.batch_sizes)
      for (uint64_t seed : cfg.seeds) {
        const bool sample = b == lm_sweep_example_batch(cfg.batch_sizes) && seed == cfg.seeds.front();
        LmRunSpec s{v, cfg.base, cfg.corpus, false, sample};
        s.config.model.gpt.norm = g.norm;
        s.config.model.gpt.position = g.position;
        s.config.train.model.norm = nn::block_norm_name(g.norm);
        s.config.train.seed = seed;
        s.config.train.batch_size = b;
        s.config.steps = steps_at(cfg, b);
        s.config.train.warmup_steps = static_cast<int64_t>(double(s.config.steps) * kLmSweepWarmupFraction);
        s.config.train.eval_every = 0;
        check_lm_run(s, f);
        specs.push_back(s);
      }
  }
  return specs;
}

Report run_lm_sweep(const LmSweepConfig& cfg, const std::vector<LmRunSpec>& specs, const StudyContext& ctx) {
  const Runs runs = train_and_record(specs, ctx, [](const LmRunSpec& s) { return lm_run_label("sweep", s); }, lm_outcome);
  const std::vector<NgramBaseline> baselines = ngram_baselines(*cfg.corpus);
  write_lm_runs_csv(specs, runs.results, ctx.out / "runs.csv");
  write_summary_csv(cfg, runs.results, ctx.out / "summary.csv");
  write_steps_csv(cfg, runs.results, ctx.out / "steps.csv");
  write_baselines_csv(baselines, ctx.out / "baselines.csv");
  const auto plots = sweep_plots(cfg, runs.results, baselines, ctx.out);
  Report rep{"Character GPT: batch-size sensitivity of each norm",
             interrupted_note(runs, "sweep") + sweep_markdown(cfg, runs.results, baselines, plots)};
  for (const std::string& v : cfg.variants)
    for (int64_t b : cfg.batch_sizes) rep.sweep_accuracy[v].emplace_back(double(b), finals_of(runs.results, v, b).eval);
  nlohmann::json man = manifest(ctx, {{"study", "sweep"}, {"over", "batch"}, {"arch", "gpt"},
                                      {"corpus", cfg.corpus->name}, {"train_tokens", cfg.tokens}, {"model", lm_sizes(cfg.base.model)},
                                      {"batch_sizes", cfg.batch_sizes}, {"base", to_json(cfg.base.train)},
                                      {"norms", cfg.variants}, {"seeds", cfg.seeds}},
                                runs.wall_seconds);
  return write_study_report(ctx, runs, "sweep", rep, man);
}

}  // namespace normlab::experiments::studies
