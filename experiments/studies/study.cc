// `normlab study` (make run): the convergence comparison and the batch-size sweep, one report; on
// Fashion-MNIST the same two for the study's CNN and a table of MLP and CNN side by side.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "data/split.h"
#include "experiments/models/model.h"
#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/studies/families.h"
#include "experiments/studies/lm_outputs.h"
#include "experiments/studies/study.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

// A part's training set: the first `limit` samples of the training split (0: all), which the
// split shuffled with the data seed: a random subset.
Splits part_data(const Splits& data, int64_t limit) {
  Splits d = data;
  if (limit > 0 && limit < data.train.size()) d.train = data::first_n(data.train, limit);
  return d;
}

// A sweep's data: part_data without the validation split, which a sweep never reads (its tables
// are of the test set) and would only cost an evaluation per run; the validation images stay out
// of training.
Splits sweep_only(Splits d) {
  d.validation = d.validation.subset({});
  return d;
}

// A part's report with its image links pointing into its subfolder.
std::string section(const Report& r, const std::string& sub_dir) {
  std::string fixed;
  for (size_t i = 0; i < r.markdown.size(); ++i) {
    fixed += r.markdown[i];
    if (r.markdown[i] == '(' && i > 0 && r.markdown[i - 1] == ']') fixed += sub_dir;
  }
  return "## " + r.title + "\n\n" + fixed + "\n";
}

// The norms at batch b tied with the best (claims.h: tied_with_best), with the best's accuracy.
std::string winners(const Report& r, double b) {
  std::vector<std::string> names;
  std::vector<std::vector<double>> acc;
  for (const auto& [n, c] : r.sweep_accuracy)
    for (const auto& [x, v] : c)
      if (x == b) names.push_back(norm(n).display), acc.push_back(v);
  const std::vector<size_t> tied = tied_with_best(acc);
  if (tied.empty()) return "-";
  std::vector<std::string> tied_names;
  for (size_t i : tied) tied_names.push_back(names[i]);
  return join_names(tied_names) + " (" + interval_cell(acc[tied.front()], kPercent) + ")";
}

// One norm's points lost at batch b against its own best batch size (the highest mean), with the
// difference's 95% interval: "best (batch)", "loss at b" cells.
std::string losses(const std::vector<std::pair<double, std::vector<double>>>& c, const std::vector<double>& at) {
  size_t best = c.size();
  for (size_t i = 0; i < c.size(); ++i)
    if (std::isfinite(mean_of(c[i].second)) && (best == c.size() || mean_of(c[i].second) > mean_of(c[best].second)))
      best = i;
  if (best == c.size()) {  // every run diverged
    std::string md = " | -";
    for (size_t i = 0; i < at.size(); ++i) md += " | diverged";
    return md;
  }
  std::string md = " | " + interval_cell(c[best].second, kPercent) + " (" + fmt(c[best].first) + ")";
  for (double b : at) {
    std::string cell = "-";
    for (const auto& [x, v] : c)
      if (x == b)
        cell = x == c[best].first          ? std::string("0 (its best)")
               : std::isfinite(mean_of(v)) ? difference_cell(c[best].second, v, kPercent)
                                           : std::string("diverged");
    md += " | " + cell;
  }
  return md;
}

// MLP and CNN side by side, from the two batch-size sweeps: at each batch size the norms tied for
// the best in each, and per norm how far the two smallest batch sizes both ran fall below the
// norm's best batch size.
std::string side_by_side(const Report& mlp, const Report& cnn) {
  std::ostringstream md;
  md << "## MLP and CNN side by side\n\nFrom the two batch-size sweeps (final test accuracy, %, mean ± 95% CI over "
        "seeds; the MLP on its sweep's images, the CNN on its own). The best norm at each batch size is the one with "
        "the highest mean, listed with every norm not distinguishable from it (Welch's t-test over seeds, 95%).\n\n"
        "| batch | MLP: best norms (best's accuracy) | CNN: best norms (best's accuracy) |\n|---|---|---|\n";
  const std::vector<double> in_mlp = batches_of(mlp), in_cnn = batches_of(cnn);
  std::vector<double> either, small;  // the batch sizes either sweep ran; those both ran
  std::set_union(in_mlp.begin(), in_mlp.end(), in_cnn.begin(), in_cnn.end(), std::back_inserter(either));
  std::set_intersection(in_mlp.begin(), in_mlp.end(), in_cnn.begin(), in_cnn.end(), std::back_inserter(small));
  for (double b : either) md << "| " << fmt(b) << " | " << winners(mlp, b) << " | " << winners(cnn, b) << " |\n";
  if (small.size() > 2) small.resize(2);
  if (small.empty()) return md.str() + "\n";
  md << "\nPoints lost at the smallest batch sizes both sweeps ran against the norm's own best batch size (the "
        "highest mean), with the 95% interval of the difference (Welch) in brackets (- where not swept):\n\n"
        "| norm | MLP best (batch)";
  for (double b : small) md << " | MLP loss at " << fmt(b);
  md << " | CNN best (batch)";
  for (double b : small) md << " | CNN loss at " << fmt(b);
  md << " |\n|---";
  for (size_t i = 0; i < 2 + 2 * small.size(); ++i) md << "|---";
  md << "|\n";
  std::vector<std::string> names;
  for (const auto* r : {&mlp, &cnn})
    for (const auto& [n, c] : r->sweep_accuracy)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  for (const std::string& n : names) {
    md << "| " << norm(n).display;
    for (const auto* r : {&mlp, &cnn}) {
      const auto it = r->sweep_accuracy.find(n);
      if (it != r->sweep_accuracy.end()) md << losses(it->second, small);
      else
        for (size_t i = 0; i <= small.size(); ++i) md << " | -";  // not in this sweep
    }
    md << " |\n";
  }
  return md.str() + "\n";
}

// The context of the study's part `sub`: its folder, its folders to resume from, and the data it
// trains on as its report describes it.
void into_part(StudyContext& part, const StudyContext& ctx, const std::string& sub, const std::string& dataset) {
  part.dataset = dataset;
  part.out = ctx.out / sub;
  part.resume_from = ctx.resume_from.empty() ? ctx.resume_from : ctx.resume_from / sub;
  part.resume_killed.clear();
  for (const auto& k : ctx.resume_killed) part.resume_killed.push_back(k / sub);
}

// The reports of the study's parts (empty for a part that is off).
struct Parts {
  Report compare, sweep, cnn_compare, cnn_sweep, lstm_compare, lstm_sweep, gpt_sweep, why;
};

// Runs each part of the plan in its subfolder.
Parts run_parts(const StudyPlan& plan, const DataSpec& spec, const Splits& data, const StudyContext& ctx) {
  const StudyConfig& cfg = plan.config;
  Parts p;
  StudyContext part = ctx;
  into_part(part, ctx, "compare", ctx.dataset);
  p.compare = run_compare(cfg.compare, plan.compare, data, part);
  into_part(part, ctx, "sweep", describe(spec, plan.sweep_data));
  p.sweep = run_sweep(cfg.sweep, plan.sweep, plan.sweep_data, part);
  if (cfg.cnn) {
    into_part(part, ctx, "cnn-compare", describe(spec, plan.cnn_data));
    p.cnn_compare = run_compare(cfg.cnn_compare, plan.cnn_compare, plan.cnn_data, part);
    into_part(part, ctx, "cnn-sweep", describe(spec, plan.cnn_sweep_data));
    p.cnn_sweep = run_sweep(cfg.cnn_sweep, plan.cnn_sweep, plan.cnn_sweep_data, part);
  }
  if (cfg.lstm) {
    into_part(part, ctx, "lstm-compare", describe(spec, plan.lstm_sweep_data));
    p.lstm_compare = run_compare(cfg.lstm_compare, plan.lstm_compare, plan.lstm_sweep_data, part);
    into_part(part, ctx, "lstm-sweep", describe(spec, plan.lstm_sweep_data));
    p.lstm_sweep = run_sweep(cfg.lstm_sweep, plan.lstm_sweep, plan.lstm_sweep_data, part);
  }
  if (cfg.gpt) {
    into_part(part, ctx, "gpt-sweep", cfg.gpt_sweep.corpus->name);
    prepare_output_dir(part.out);
    p.gpt_sweep = run_lm_sweep(cfg.gpt_sweep, plan.gpt_sweep, part);
  }
  if (cfg.why) {
    into_part(part, ctx, "why", describe(spec, plan.why_data));
    p.why = run_compare(cfg.why_compare, plan.why_compare, plan.why_data, part);
  }
  return p;
}

// The report's data paragraphs and the MLP's and CNN's sections, with the table of the two.
std::string mlp_and_cnn_markdown(const StudyPlan& plan, const DataSpec& spec, const Splits& data, Parts p) {
  const StudyConfig& cfg = plan.config;
  const Splits& sweep = plan.sweep_data;
  std::string md = "Data: " + describe(spec, data) + ". The sweeps hold out the same validation images but do not "
                   "evaluate them (their tables are of the test set).\n\n";
  const std::string subset = ", the first of the training split, which is shuffled with data seed " +
                             std::to_string(spec.seed);
  if (sweep.train.size() < data.train.size())
    md += "To fit the time budget, the batch-size sweep trains on a random subset of " +
          std::to_string(sweep.train.size()) + " of the " + std::to_string(data.train.size()) +
          " training images (`--sweep-train-limit`" + subset + "); `normlab sweep --full` runs the complete protocol.\n\n";
  md += section(p.compare, "compare/") + section(p.sweep, "sweep/");
  if (!cfg.cnn) return md;
  md += "**The convolutional network.** The study's CNN (" + describe(cfg.cnn_compare.base.model) +
        ") on a random subset of " + std::to_string(plan.cnn_data.train.size()) + " training images (`--cnn-train-limit`" +
        subset + ") and the same test set.\n\n";
  p.cnn_compare.title = "CNN: " + p.cnn_compare.title, p.cnn_sweep.title = "CNN: " + p.cnn_sweep.title;
  return md + section(p.cnn_compare, "cnn-compare/") + section(p.cnn_sweep, "cnn-sweep/") + side_by_side(p.sweep, p.cnn_sweep);
}

// The Why part's section: the shrunk MLP protocol of the landscape probes, its comparison's report.
std::string why_part_markdown(const StudyPlan& plan, Parts p) {
  const StudyConfig& cfg = plan.config;
  if (!cfg.why) return "";
  const TrainConfig& b = cfg.why_compare.base;
  std::string md =
      "**Why a norm helps.** The seed documents explain normalization by \"internal covariate shift\" and by "
      "\"more even steps\"; this part measures both on the MLP (" + describe(b.model) + ") with the landscape probes, "
      "on a random subset of " + std::to_string(plan.why_data.train.size()) + " training images (`--why-train-limit`, "
      "the first of the shuffled training split) and the test set: plain SGD (no momentum, no weight decay) at a "
      "constant learning rate " + fmt(b.lr) + " (`--why-lr`), batch 128, " + count_of(b.epochs, "epoch") +
      " (`--why-epochs`), noisy BatchNorm as the control (BatchNorm whose every unit gets a random scale and shift "
      "at each step). `normlab compare` with `--probe-every` and `--curvature-samples` runs the complete protocol "
      "(docs/studies.md).";
  if (cfg.lstm && cfg.lstm_compare.base.probe_every > 0)
    md += " The LSTM comparison above carries the same step probes (every " +
          count_of(cfg.lstm_compare.base.probe_every, "step") + ", no curvature), in its own Why section.";
  const std::string convergence = "Convergence: ";  // the comparison's title: "Convergence: A vs B"
  if (p.why.title.rfind(convergence, 0) == 0) p.why.title = "Why a norm helps: " + p.why.title.substr(convergence.size());
  return md + "\n\n" + section(p.why, "why/");
}

// The LSTM's and the GPT's sections, and the table of the families side by side (with two or more).
std::string sequence_markdown(const StudyPlan& plan, const DataSpec& spec, Parts p) {
  const StudyConfig& cfg = plan.config;
  std::string md;
  if (cfg.lstm) {
    md += "**The recurrent network.** The study's LSTM (" + describe(cfg.lstm_sweep.base.model) +
          ": each image a sequence of its 28 rows of 28 pixels, classified from the last hidden state) on a random "
          "subset of " + std::to_string(plan.lstm_sweep_data.train.size()) + " training images (`--lstm-train-limit`, "
          "the first of the training split, which is shuffled with data seed " + std::to_string(spec.seed) +
          "), scored on the first " + std::to_string(plan.lstm_sweep_data.test.size()) +
          " test images (`--lstm-test-limit`); `normlab compare --arch lstm` and `normlab sweep --arch lstm` run the complete "
          "protocol.\n\n";
    p.lstm_compare.title = "LSTM: " + p.lstm_compare.title, p.lstm_sweep.title = "LSTM: " + p.lstm_sweep.title;
    md += section(p.lstm_compare, "lstm-compare/") + section(p.lstm_sweep, "lstm-sweep/");
  }
  if (cfg.gpt) {
    md += "**The character GPT.** A small GPT on a text corpus (below), the same number of training tokens at every "
          "batch size; `normlab sweep --dataset text` runs the complete protocol.\n\n";
    p.gpt_sweep.title = "GPT: " + p.gpt_sweep.title;
    md += section(p.gpt_sweep, "gpt-sweep/");
  }
  std::vector<FamilySweep> families;
  const auto registered = [](const std::string& n) { return norm(n).display; };
  families.push_back({"MLP", "test accuracy, %", &p.sweep, false, kPercent, registered, cfg.why ? &p.why : nullptr});
  if (cfg.cnn) families.push_back({"CNN", "test accuracy, %", &p.cnn_sweep, false, kPercent, registered});
  if (cfg.lstm)
    families.push_back({"LSTM", "test accuracy, %", &p.lstm_sweep, false, kPercent, registered,
                        p.lstm_compare.why.empty() ? nullptr : &p.lstm_compare});
  if (cfg.gpt) families.push_back({"GPT", "validation bits/char", &p.gpt_sweep, true, kBitsUnits, variant_display});
  md += why_part_markdown(plan, p);
  return families.size() > 1 ? md + families_section(families) : md;
}

}  // namespace

StudyPlan plan_study(const StudyConfig& cfg, const Splits& data) {
  StudyPlan p{cfg, sweep_only(part_data(data, cfg.sweep_train_limit))};
  p.compare = compare_runs(cfg.compare, data);
  p.sweep = sweep_runs(cfg.sweep, p.sweep_data);
  if (cfg.cnn) {
    p.cnn_data = part_data(data, cfg.cnn_train_limit);
    p.cnn_compare = compare_runs(cfg.cnn_compare, p.cnn_data);
    p.cnn_sweep_data = sweep_only(p.cnn_data);
    p.cnn_sweep = sweep_runs(cfg.cnn_sweep, p.cnn_sweep_data);
  }
  if (cfg.lstm) {
    p.lstm_sweep_data = sweep_only(part_data(data, cfg.lstm_train_limit));
    if (cfg.lstm_test_limit > 0 && cfg.lstm_test_limit < p.lstm_sweep_data.test.size())
      p.lstm_sweep_data.test = data::first_n(p.lstm_sweep_data.test, cfg.lstm_test_limit);
    p.lstm_compare = compare_runs(cfg.lstm_compare, p.lstm_sweep_data);
    p.lstm_sweep = sweep_runs(cfg.lstm_sweep, p.lstm_sweep_data);
  }
  if (cfg.gpt) p.gpt_sweep = lm_sweep_runs(cfg.gpt_sweep);
  if (cfg.why) {
    p.why_data = sweep_only(part_data(data, cfg.why_train_limit));
    p.why_compare = compare_runs(cfg.why_compare, p.why_data);
  }
  return p;
}

Report run_study(const StudyPlan& plan, const DataSpec& spec, const Splits& data, const StudyContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  const StudyConfig& cfg = plan.config;
  prepare_output_dir(ctx.out);
  const Parts p = run_parts(plan, spec, data, ctx);
  Report rep{"normlab study: BatchNorm vs LayerNorm", "", false, false, 0, 0};
  for (const Report* r :
       {&p.compare, &p.sweep, &p.cnn_compare, &p.cnn_sweep, &p.lstm_compare, &p.lstm_sweep, &p.gpt_sweep, &p.why}) {
    rep.interrupted = rep.interrupted || r->interrupted;
    rep.runs_done += r->runs_done, rep.runs_total += r->runs_total;
  }
  std::string md = "# " + rep.title + "\n\nCommand: `" + ctx.command_line + "`\n\n";
  if (rep.interrupted)
    md += "**Interrupted (Ctrl-C): " + std::to_string(rep.runs_done) + " of " + std::to_string(rep.runs_total) +
          " runs finished.** `normlab study --resume` with the same flags and `--out` trains the rest.\n\n";
  md += mlp_and_cnn_markdown(plan, spec, data, p) + sequence_markdown(plan, spec, p);
  write_file_atomic(ctx.out / "report.md", md);
  nlohmann::json man = manifest(ctx, {{"study", "study"}, {"sweep_train_limit", cfg.sweep_train_limit}},
                                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  nlohmann::json parts{"compare", "sweep"};
  if (cfg.cnn) parts.push_back("cnn-compare"), parts.push_back("cnn-sweep"), man["cnn_train_limit"] = cfg.cnn_train_limit;
  if (cfg.lstm)
    parts.push_back("lstm-compare"), parts.push_back("lstm-sweep"), man["lstm_train_limit"] = cfg.lstm_train_limit;
  if (cfg.gpt) parts.push_back("gpt-sweep"), man["gpt_train_tokens"] = cfg.gpt_sweep.tokens;
  if (cfg.why) parts.push_back("why"), man["why_train_limit"] = cfg.why_train_limit;
  man["parts"] = parts;
  man["runs_total"] = rep.runs_total;
  man["runs_finished"] = rep.runs_done;
  man["interrupted"] = rep.interrupted;
  write_file_atomic(ctx.out / "manifest.json", man.dump(2) + "\n");
  if (!ctx.quiet) std::fputs(md.c_str(), stdout);
  return rep;
}

}  // namespace normlab::experiments::studies
