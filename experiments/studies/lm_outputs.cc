// The tables, baselines and text that the GPT normalization studies share (lm_outputs.h).
#include "experiments/studies/lm_outputs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "data/ngram.h"
#include "experiments/models/language_model.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/run/trainer.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

namespace {

// The columns of a run's settings in runs.csv, and their cells.
std::vector<std::string> settings_columns() {
  return {"corpus", "arch", "norm", "block_norm", "position", "seed", "batch_size", "block_size", "layers", "heads",
          "width", "parameters", "lr", "steps_planned"};
}

std::vector<std::string> settings_cells(const LmRunSpec& s, const RunResult& r) {
  const LmTrainConfig& c = s.config;
  const nn::GPTConfig& g = c.model.gpt;
  return {s.corpus->name, c.model.arch, s.variant, nn::block_norm_name(g.norm), nn::norm_position_name(g.position),
          std::to_string(r.config.seed), std::to_string(r.config.batch_size), std::to_string(r.block_size),
          std::to_string(g.n_layer), std::to_string(g.n_head), std::to_string(g.width), std::to_string(r.parameters),
          fmt(c.train.lr), std::to_string(r.total_steps)};
}

// A loss and its bits, or two empty cells for NaN where it does not apply.
void add_loss(std::vector<std::string>& row, double nats, bool applies) {
  row.push_back(applies ? fmt(nats) : "");
  row.push_back(applies ? fmt(bits(nats)) : "");
}

}  // namespace

std::vector<NgramBaseline> ngram_baselines(const data::TextCorpus& corpus) {
  std::vector<NgramBaseline> b;
  const int64_t v = corpus.vocabulary.size();
  for (int n = 1; n <= kNgramMaxOrder; ++n)
    if (static_cast<int64_t>(corpus.validation.size()) >= n)
      b.push_back({n, data::ngram_bits_per_char(corpus.train, corpus.validation, v, n, kNgramAlpha)});
  return b;
}

void write_baselines_csv(const std::vector<NgramBaseline>& b, const std::filesystem::path& path) {
  CsvTable t({"n", "alpha", "val_bits_per_char"});
  for (const NgramBaseline& x : b) t.add_row({std::to_string(x.n), fmt(kNgramAlpha), fmt(x.bits)});
  t.write(path);
}

std::string baselines_sentence(const std::vector<NgramBaseline>& b) {
  std::ostringstream s;
  s << "Character n-gram baselines of the same split (add-" << fmt(kNgramAlpha)
    << " smoothing, counted on the training split, scored on the validation split; baselines.csv): ";
  for (size_t i = 0; i < b.size(); ++i) s << (i ? ", " : "") << b[i].n << "-gram " << bits_text(b[i].bits);
  s << " bits/char.";
  return s.str();
}

std::string bits_text(double bits) { return report::interval_cell({bits}, kBitsUnits); }

std::string baseline_position(double bits, const std::vector<NgramBaseline>& b) {
  if (b.empty() || !std::isfinite(bits)) return "";
  std::vector<std::string> below, above;
  for (const NgramBaseline& x : b)
    (bits < x.bits ? below : above).push_back(std::to_string(x.n) + "-gram (" + bits_text(x.bits) + ")");
  std::string s = "Its mean is ";
  if (!below.empty()) s += "below the " + report::join_names(below) + " baseline" + (below.size() > 1 ? "s" : "");
  if (!below.empty() && !above.empty()) s += " and ";
  if (!above.empty()) s += "not below the " + report::join_names(above) + " baseline" + (above.size() > 1 ? "s" : "");
  if (bits >= b.back().bits)
    s += ": a model that does not beat the " + std::to_string(b.back().n) +
         "-gram has learned little about the text, so the norms' differences say little yet (train longer)";
  return s + ". ";
}

std::vector<report::Series> baseline_lines(const std::vector<NgramBaseline>& b, double x0, double x1) {
  std::vector<report::Series> lines;
  for (const NgramBaseline& x : b) {
    if (x.n < 2) continue;
    report::Series s{std::to_string(x.n) + "-gram baseline (" + bits_text(x.bits) + ")"};
    s.x = {x0, x1};
    s.y = {x.bits, x.bits};
    s.style = {report::kGrey, x.n - 1, x.n};  // markers +, x, *; dashed, dotted, dash-dotted
    lines.push_back(s);
  }
  return lines;
}

void write_lm_runs_csv(const std::vector<LmRunSpec>& specs, const std::vector<RunResult>& results,
                       const std::filesystem::path& path) {
  std::vector<std::string> header = settings_columns();
  for (const char* c : {"step", "tokens", "windows", "all_windows", "val_loss", "val_bits_per_char",
                        "val_loss_train_mode", "val_bits_per_char_train_mode", "diverged"})
    header.push_back(c);
  CsvTable t(header);
  for (size_t i = 0; i < results.size(); ++i) {
    const RunResult& r = results[i];
    const bool bn = variant_has_batch_statistics(r.variant);
    std::vector<EvalRecord> evals = r.evals;
    if (r.diverged) evals.push_back({static_cast<int64_t>(r.steps.size()), 0, false, NAN, NAN});
    for (const EvalRecord& e : evals) {
      std::vector<std::string> row = settings_cells(specs[i], r);
      for (const std::string& c : {std::to_string(e.step), std::to_string(e.step * r.config.batch_size * r.block_size),
                                   std::to_string(e.windows), std::string(e.all ? "1" : "0")})
        row.push_back(c);
      add_loss(row, e.val_loss, true);
      add_loss(row, e.val_loss_train_mode, bn);
      row.push_back(r.diverged ? "1" : "0");
      t.add_row(row);
    }
  }
  t.write(path);
}

std::map<std::string, std::string> lm_sizes(const CharModelSpec& model) {
  auto md = char_model_metadata(model);
  md.erase("norm");
  md.erase("position");
  return md;
}

std::string lm_setup_markdown(const LmTrainConfig& t, const data::TextCorpus& c) {
  const nn::GPTConfig& g = t.model.gpt;
  std::ostringstream md;
  md << "- Corpus: " << (c.name == "fortunes" ? "Debian's fortunes (" + std::string(data::kFortunesDir) + ")" : "`" + c.name + "`")
     << ", " << c.characters << " characters, vocabulary of " << c.vocabulary.size() << "; the first " << c.train.size()
     << " characters train, the last " << c.validation.size() << " validate (--val-fraction "
     << fmt(c.validation_fraction) << ", contiguous)\n"
     << "- Model: GPT, " << report::count_of(g.n_layer, "layer") << ", " << report::count_of(g.n_head, "head")
     << ", width " << g.width << ", block size " << t.model.block_size << "; the norm of every block's ln_1 and ln_2 "
     << "(and the final ln_f) is the variant's\n"
     << "- Training: " << optimizer_text(t.train, true) << " (weight decay on 2-D weights only), warmup then "
     << t.train.schedule << ", gradient clipping at "
     << (t.clip_grad_norm > 0 ? fmt(t.clip_grad_norm) : std::string("none")) << "; batches of random windows of the "
     << "training split (seeded by the run's seed)\n"
     << "- Validation loss: mean cross-entropy over the non-overlapping windows of the validation split, in bits per "
     << "character (nats / ln 2), the model in eval mode (BatchNorm with its running statistics)\n";
  return md.str();
}

LmFinals finals_of(const std::vector<RunResult>& results, const std::string& variant, int64_t batch) {
  LmFinals f;
  for (const RunResult& r : results) {
    if (r.variant != variant || (batch > 0 && r.config.batch_size != batch)) continue;
    ++f.runs;
    const EvalRecord* e = final_eval(r);
    if (!e) ++f.diverged;
    const double ev = e ? bits(e->val_loss) : NAN, tr = e ? bits(e->val_loss_train_mode) : NAN;
    f.eval.push_back(ev);
    f.train_mode.push_back(tr);
    f.gap.push_back(tr - ev);
  }
  return f;
}

std::string gap_text(const std::vector<double>& gap) {
  const report::MeanInterval m = report::mean_interval(gap);
  if (m.n == 0) return "n/a";
  std::string text = report::interval_cell(gap, kBitsUnits) + " bits/char";
  if (m.n < 2) return text + " (one seed: not tested)";
  const bool below = m.high() < 0, above = m.low() > 0;
  return text + " (paired over the seeds: " +
         (below ? std::string("train mode lower, the 95% interval below 0")
                : above ? std::string("train mode higher, the 95% interval above 0")
                        : "not distinguishable from 0 at n = " + std::to_string(m.n)) +
         ")";
}

std::string batch_gap_explanation() {
  return "Why the two modes can differ: in training mode BatchNorm normalizes each position with the mean and "
         "variance of the whole batch of windows, later tokens included, so an earlier position's prediction "
         "depends on characters it should not have seen (a causal leak the model can learn to read, which lowers "
         "the train-mode loss), while in eval mode, as at generation, it must use running averages that no "
         "training batch had (the train/inference mismatch, which the eval-mode loss pays for); the eval-mode loss "
         "is the one a generating model has.";
}

report::PlotSpec training_loss_plot(const std::vector<std::string>& variants, const std::vector<RunResult>& results,
                                    int64_t steps, int64_t batch) {
  using namespace report;
  PlotSpec p{"Training loss", "step", "cross-entropy (nats per character)"};
  p.log_y = LogY::if_wide;
  p.dense = true;
  const int64_t bin = std::max<int64_t>(1, steps / 100);
  for (const std::string& v : variants) {
    std::map<int64_t, std::vector<double>> by_bin;
    for (const RunResult& r : results) {
      if (r.variant != v || (batch > 0 && r.config.batch_size != batch)) continue;
      std::map<int64_t, std::pair<double, int>> bins;
      for (const StepRecord& s : r.steps) bins[s.step / bin].first += s.loss, bins[s.step / bin].second += 1;
      for (const auto& kv : bins) by_bin[kv.first].push_back(kv.second.first / kv.second.second);
    }
    Series s{variant_display(v)};
    s.style = variant_style(v);
    for (const auto& kv : by_bin) add_mean_point(s, double(kv.first * bin + bin / 2 + 1), kv.second);
    p.series.push_back(s);
  }
  return p;
}

std::string samples_markdown(const std::vector<RunResult>& results, const std::string& which) {
  std::ostringstream md;
  md << "**Samples.** One per norm, from " << which << " (eval mode), after the prompt shown, "
     << kLmSample.length << " characters sampled at temperature " << fmt(kLmSample.temperature)
     << " (no top-k) with generator seed " << kLmSample.seed << ":\n\n";
  for (const RunResult& r : results) {
    if (r.sample_prompt.empty() || !final_eval(r)) continue;
    md << "- " << variant_display(r.variant) << " (seed " << r.config.seed << ", "
       << bits_text(bits(final_eval(r)->val_loss)) << " bits/char):\n\n````text\n" << r.sample_prompt << r.sample
       << "\n````\n\n";
  }
  return md.str();
}

}  // namespace normlab::experiments::studies
