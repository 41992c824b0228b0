// `normlab compare --dataset text --arch gpt`: runs, tables, plots and the reading (lm_compare.h).
#include "experiments/studies/lm_compare.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "base/error.h"
#include "experiments/models/language_model.h"
#include "experiments/records/records.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/report/tidy.h"
#include "experiments/report/why.h"
#include "experiments/studies/lm_outputs.h"
#include "experiments/studies/lm_runs.h"
#include "experiments/studies/study_runs.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

// steps.csv: norm, seed, step, loss, lr, grad_norm of every training step of every run.
void write_steps_csv(const std::vector<RunResult>& results, const std::filesystem::path& path) {
  CsvTable t({"norm", "seed", "step", "loss", "lr", "grad_norm"});
  for (const RunResult& r : results)
    for (const StepRecord& s : r.steps)
      t.add_row({r.variant, std::to_string(r.config.seed), std::to_string(s.step + 1), fmt(s.loss), fmt(s.lr), fmt(s.grad_norm)});
  t.write(path);
}

void write_summary_csv(const LmCompareConfig& cfg, const std::vector<RunResult>& results,
                       const std::filesystem::path& path) {
  std::vector<std::string> header{"norm", "block_norm", "position", "runs", "diverged"};
  for (const char* e : {"val_bits_per_char", "val_loss", "val_bits_per_char_train_mode", "train_mode_gap_bits"})
    for (const std::string& c : interval_columns(e)) header.push_back(c);
  CsvTable t(header);
  for (const std::string& v : cfg.variants) {
    const GptVariant g = gpt_variant(v);
    LmFinals f = finals_of(results, v);
    std::vector<double> nats;
    for (double b : f.eval) nats.push_back(b * std::log(2.0));
    std::vector<std::string> row{v, nn::block_norm_name(g.norm), nn::norm_position_name(g.position),
                                 std::to_string(f.runs), std::to_string(f.diverged)};
    for (const std::vector<double>* x : {&f.eval, &nats, &f.train_mode, &f.gap})
      for (const std::string& c : interval_values(*x)) row.push_back(c);
    t.add_row(row);
  }
  t.write(path);
}

// Validation bits per character vs step, one line per variant (mean over seeds, 95% band), and the
// baselines; the last step's point is the evaluation over every window.
PlotSpec validation_plot(const LmCompareConfig& cfg, const std::vector<RunResult>& results,
                         const std::vector<NgramBaseline>& baselines) {
  PlotSpec p{"Validation loss per step", "step", "validation bits per character"};
  for (const std::string& v : cfg.variants) {
    std::map<int64_t, std::vector<double>> by_step;
    for (const RunResult& r : results) {
      if (r.variant != v) continue;
      std::map<int64_t, double> mine;  // the final evaluation replaces a periodic one at the last step
      for (const EvalRecord& e : r.evals) mine[e.step] = bits(e.val_loss);
      for (const auto& sv : mine) by_step[sv.first].push_back(sv.second);
    }
    Series s{variant_display(v)};
    s.style = variant_style(v);
    for (const auto& sv : by_step) add_mean_point(s, double(sv.first), sv.second);
    p.series.push_back(s);
  }
  for (const Series& line : baseline_lines(baselines, 0, double(cfg.base.steps))) p.series.push_back(line);
  return p;
}

std::vector<std::string> compare_plots(const LmCompareConfig& cfg, const std::vector<RunResult>& results,
                                       const std::vector<NgramBaseline>& baselines, const std::filesystem::path& out) {
  if (!gnuplot_available() || results.empty()) return {};
  std::vector<std::string> plots;
  if (render_plot(validation_plot(cfg, results, baselines), out, "val_bits_per_char")) plots.push_back("val_bits_per_char");
  if (render_plot(training_loss_plot(cfg.variants, results, cfg.base.steps), out, "loss_curves")) plots.push_back("loss_curves");
  return plots;
}

std::string results_table(const LmCompareConfig& cfg, const std::vector<RunResult>& results) {
  std::ostringstream md;
  md << "| norm | validation bits/char | validation loss (nats/char) | train mode (batch statistics), bits/char | "
        "train mode minus eval mode | diverged |\n|---|---|---|---|---|---|\n";
  const Units nats{1, 4, ""};
  for (const std::string& v : cfg.variants) {
    const LmFinals f = finals_of(results, v);
    std::vector<double> n;
    for (double b : f.eval) n.push_back(b * std::log(2.0));
    const bool bn = variant_has_batch_statistics(v);
    md << "| " << variant_display(v) << " | " << interval_cell(f.eval, kBitsUnits) << " | " << interval_cell(n, nats)
       << " | " << (bn ? interval_cell(f.train_mode, kBitsUnits) : "-") << " | "
       << (bn ? interval_cell(f.gap, kBitsUnits) : "-") << " | " << f.diverged << "/" << f.runs << " |\n";
  }
  return md.str();
}

// The lowest validation loss, each other variant against it, and the variants tied with it.
std::string best_reading(const LmCompareConfig& cfg, const std::vector<RunResult>& results,
                         const std::vector<NgramBaseline>& baselines) {
  std::vector<std::vector<double>> bits;
  for (const std::string& v : cfg.variants) bits.push_back(finals_of(results, v).eval);
  const Ranking r = rank_against_best(bits, kBitsUnits, /*lower_is_better=*/true);
  if (!r.found()) return "No run finished. ";
  const std::vector<double>& best_bits = bits[r.best()];
  std::ostringstream md;
  md << "Lowest mean validation loss: " << variant_display(cfg.variants[r.best()]) << " ("
     << interval_cell(best_bits, kBitsUnits) << " bits/char)";
  std::vector<std::string> others;
  for (const Ranking::Other& o : r.others)
    if (o.finite) others.push_back(variant_display(cfg.variants[o.index]) + " " + o.difference);
  if (!others.empty()) md << "; each other norm minus it: " << join_names(others);
  md << ". ";
  if (r.tied.size() > 1) {
    std::vector<std::string> names;
    for (size_t i : r.tied) names.push_back(variant_display(cfg.variants[i]));
    md << tied_sentence(names, cfg.seeds.size());
  } else if (cfg.variants.size() > 1) {
    md << capitalized(variant_display(cfg.variants[r.best()])) << " is distinguishably the best (Welch's t-test, p < 0.05 "
       << "against every other norm). ";
  }
  md << baseline_position(mean_of(best_bits), baselines);
  return md.str();
}

// BatchNorm's train-mode loss beside its eval-mode loss, the gap tested, and why there is one.
std::string batch_reading(const LmCompareConfig& cfg, const std::vector<RunResult>& results) {
  std::ostringstream md;
  for (const std::string& v : cfg.variants) {
    if (!variant_has_batch_statistics(v)) continue;
    const LmFinals f = finals_of(results, v);
    if (!std::isfinite(mean_of(f.eval))) continue;
    md << capitalized(variant_display(v)) << " in train mode (each validation batch of " << cfg.base.train.batch_size
       << " windows normalized with its own statistics): " << interval_cell(f.train_mode, kBitsUnits)
       << " bits/char, in eval mode (running statistics): " << interval_cell(f.eval, kBitsUnits)
       << "; train minus eval: " << gap_text(f.gap) << ". ";
  }
  if (md.tellp() > 0) md << batch_gap_explanation() << " ";
  return md.str();
}

// How the Why section names the GPT's variants and scores its runs (report/why.h).
WhyLook gpt_why_look() {
  WhyLook look;
  look.display = variant_display;
  look.style = variant_style;
  look.score_lower_is_better = true;
  look.score = "final validation loss (bits per character)";
  look.score_units = kBitsUnits;
  look.layers = "the embeddings; a transformer block with its norms; the final norm with the output head";
  look.samples = "training windows";
  return look;
}

// The landscape probes' records, tables and plots (with --probe-every, --curvature-samples);
// returns the Why section ("" without probes).
std::string why_outputs(const LmCompareConfig& cfg, const std::vector<RunResult>& results, const StudyContext& ctx) {
  if (!has_probes(results)) return "";
  const WhyLook look = gpt_why_look();
  write_probe_records(results, {"norm", "seed"},
                      [](const RunResult& r) { return std::vector<std::string>{r.variant, std::to_string(r.config.seed)}; },
                      ctx.out);
  write_why_tables(results, cfg.variants, cfg.corpus->name, ctx.out, look);
  std::vector<std::string> plots;
  if (gnuplot_available())
    for (const WhyPlot& p : why_plots(results, cfg.variants, look))
      if (render_panels(p.title, p.panels, p.cols, ctx.out, p.stem)) plots.push_back(p.stem);
  return why_markdown(results, cfg.variants, plots, cfg.seeds.size(), look);
}

std::string compare_markdown(const LmCompareConfig& cfg, const std::vector<RunResult>& results,
                             const std::vector<NgramBaseline>& baselines, const std::vector<std::string>& plots,
                             const std::string& why) {
  const TrainConfig& t = cfg.base.train;
  std::ostringstream md;
  md << lm_setup_markdown(cfg.base, *cfg.corpus) << "- Runs: " << cfg.base.steps << " steps of batch " << t.batch_size
     << " (" << cfg.base.steps * t.batch_size * cfg.base.model.block_size << " training tokens), warmup "
     << t.warmup_steps << " steps, " << count_of(static_cast<int64_t>(cfg.seeds.size()), "seed") << " per norm; "
     << (t.eval_every > 0 ? "validation every " + count_of(t.eval_every, "step") + " on the first " +
                                std::to_string(kLmEvalWindows) + " windows, and "
                          : std::string())
     << "after the last step on every window (the table)\n\n"
     << (cfg.seeds.size() > 1 ? "Cells: mean ± half-width of the 95% confidence interval over the seeds (Student t).\n\n"
                              : "One seed: no intervals.\n\n")
     << results_table(cfg, results) << "\n" << image_links(plots) << "**Reading.** "
     << best_reading(cfg, results, baselines) << batch_reading(cfg, results)
     << (cfg.seeds.size() > 1 ? "Differences are tested with Welch's t-test over seeds. " : "") << "\n\n"
     << baselines_sentence(baselines) << "\n\n" << (why.empty() ? "" : why + "\n")
     << samples_markdown(results, "its first seed's model");
  return md.str();
}

}  // namespace

std::vector<LmRunSpec> lm_compare_runs(const LmCompareConfig& cfg) {
  if (cfg.variants.empty()) throw Error("--norms: give at least one norm");
  if (cfg.seeds.empty()) throw Error("--seeds: give at least one seed");
  if (!cfg.corpus || cfg.corpus->validation.empty())
    throw Error("--val-fraction 0 leaves no validation split: compare --dataset text compares validation losses");
  std::vector<LmRunSpec> specs;
  for (const std::string& v : cfg.variants) {
    const GptVariant g = gpt_variant(v);
    for (size_t i = 0; i < cfg.seeds.size(); ++i) {
      LmRunSpec s{v, cfg.base, cfg.corpus, true, i == 0};
      s.config.model.gpt.norm = g.norm;
      s.config.model.gpt.position = g.position;
      s.config.train.seed = cfg.seeds[i];
      s.config.train.model.norm = nn::block_norm_name(g.norm);
      check_lm_run(s);
      specs.push_back(s);
    }
  }
  return specs;
}

Report run_lm_compare(const LmCompareConfig& cfg, const std::vector<LmRunSpec>& specs, const StudyContext& ctx) {
  const Runs runs = train_and_record(specs, ctx, [](const LmRunSpec& s) { return lm_run_label("compare", s); }, lm_outcome);
  const std::vector<NgramBaseline> baselines = ngram_baselines(*cfg.corpus);
  write_lm_runs_csv(specs, runs.results, ctx.out / "runs.csv");
  write_steps_csv(runs.results, ctx.out / "steps.csv");
  write_summary_csv(cfg, runs.results, ctx.out / "summary.csv");
  write_baselines_csv(baselines, ctx.out / "baselines.csv");
  const auto plots = compare_plots(cfg, runs.results, baselines, ctx.out);
  const std::string why = why_outputs(cfg, runs.results, ctx);
  std::string title = "Character GPT: ";
  for (size_t i = 0; i < cfg.variants.size(); ++i) title += (i ? " vs " : "") + variant_display(cfg.variants[i]);
  const nlohmann::json man = manifest(ctx, {{"study", "compare"}, {"arch", "gpt"}, {"corpus", cfg.corpus->name},
                                      {"steps", cfg.base.steps}, {"model", lm_sizes(cfg.base.model)}, {"base", to_json(cfg.base.train)},
                                      {"norms", cfg.variants}, {"seeds", cfg.seeds}},
                                runs.wall_seconds);
  Report rep =
      write_study_report(ctx, runs, "compare", {title, compare_markdown(cfg, runs.results, baselines, plots, why)}, man);
  if (has_probes(runs.results))
    for (const std::string& v : cfg.variants) rep.why[v] = why_values(runs.results, v);
  return rep;
}

}  // namespace normlab::experiments::studies
