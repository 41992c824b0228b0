// `normlab compare`: the same model, data, seeds and budget under each norm; loss curves, accuracy
// per epoch, steps and epochs to a target accuracy, activation statistics and gradient norms, mean
// over seeds with 95% intervals, differences tested (Welch).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/models/archs.h"
#include "experiments/records/records.h"
#include "experiments/report/claims.h"
#include "experiments/report/input_grads.h"
#include "experiments/report/layer_stats.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/report/tidy.h"
#include "experiments/report/why.h"
#include "experiments/run/runs.h"
#include "experiments/studies/study.h"
#include "experiments/studies/study_runs.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

// The mean over the seeds that reached the target (the others hold NaN), "-" when none did.
std::string mean_or_dash(const std::vector<double>& v, int digits) {
  std::vector<double> reached;
  for (double x : v)
    if (std::isfinite(x)) reached.push_back(x);
  return reached.empty() ? "-" : fmt(mean_of(reached), digits);
}

// How a score reads: % with 2 decimals (differences in points), or R² with 4.
Units score_units(const ScoreText& sc) { return sc.percent ? kPercent : Units{1, 4, ""}; }

// Mean ± 95% CI over seeds (the mean alone for one seed), "n/a" when no run finished.
std::string pm(const std::vector<double>& v, const Units& u) {
  return std::isfinite(mean_of(v)) ? interval_cell(v, u) : "n/a";
}

// The first epoch whose held-out accuracy reaches the target (validation if there is one).
const EpochRecord* first_reaching(const RunResult& r, double target, bool use_val) {
  for (const auto& e : r.epochs)
    if ((use_val ? e.val_acc : e.test_acc) >= target) return &e;
  return nullptr;
}

// The steps to the first evaluation whose held-out accuracy reaches the target: after an epoch, or
// every --eval-every steps (finer than epochs); NaN when none does.
double steps_reaching(const RunResult& r, double target, bool use_val) {
  double steps = NAN;
  for (const auto& e : r.evals)
    if ((use_val ? e.val_acc : e.test_acc) >= target) {
      steps = static_cast<double>(e.step);
      break;
    }
  if (const EpochRecord* hit = first_reaching(r, target, use_val); hit && !(hit->step >= steps))
    steps = static_cast<double>(hit->step);
  return steps;
}

// One norm's runs over the seeds.
struct Agg {
  std::vector<double> acc, loss, epochs_to, steps_to;
  int diverged = 0, reached = 0;
};

std::map<std::string, Agg> aggregate(const CompareConfig& cfg, const std::vector<RunResult>& runs, bool use_val) {
  const double target = cfg.target_accuracy;
  std::map<std::string, Agg> agg;
  for (const auto& n : cfg.norms) agg[n];  // every norm, with or without finished runs
  for (const RunResult& r : runs) {
    Agg& a = agg[r.config.model.norm];
    if (r.diverged) ++a.diverged;
    if (!r.epochs.empty() && !r.diverged) {
      a.acc.push_back(final_epoch(r).test_acc);
      a.loss.push_back(final_epoch(r).test_loss);
    }
    const EpochRecord* hit = first_reaching(r, target, use_val);
    a.epochs_to.push_back(hit ? hit->epoch : NAN);
    a.steps_to.push_back(steps_reaching(r, target, use_val));
    if (std::isfinite(a.steps_to.back())) ++a.reached;
  }
  return agg;
}

// runs.csv, summary.csv and the per-run records.
void write_tables(const CompareConfig& cfg, const std::vector<RunResult>& runs, const std::map<std::string, Agg>& agg,
                  const StudyContext& ctx, bool use_val) {
  const std::string sc = score_text(cfg.base).csv;
  RunTable runs_csv({"diverged", "diverged_step", "final_train_loss", "final_test_loss", "final_test_" + sc,
                     "epochs_to_target", "steps_to_target", "target_" + sc},
                    ctx.dataset);
  for (const RunResult& r : runs) {
    const EpochRecord* hit = first_reaching(r, cfg.target_accuracy, use_val);
    const EpochRecord* last = r.epochs.empty() ? nullptr : &final_epoch(r);
    runs_csv.add(r, {r.diverged ? "1" : "0", std::to_string(r.diverged_step), last ? fmt(last->train_loss) : "nan",
                     last ? fmt(last->test_loss) : "nan", last ? fmt(last->test_acc) : "nan",
                     hit ? std::to_string(hit->epoch) : "",
                     [&] {
                       const double s = steps_reaching(r, cfg.target_accuracy, use_val);
                       return std::isfinite(s) ? std::to_string(static_cast<int64_t>(s)) : std::string();
                     }(),
                     fmt(cfg.target_accuracy)});
  }
  // Per norm: the runs, how many diverged, the final test score and loss over the seeds (n, mean,
  // std, standard error, 95% interval), and the steps to the target over the seeds that reached it.
  std::vector<std::string> header{"norm", "runs", "diverged"};
  for (const std::string& e : {"test_" + sc, std::string("test_loss")})
    for (auto& c : interval_columns(e)) header.push_back(c);
  for (const char* c : {"reached_target", "epochs_to_target_mean", "steps_to_target_mean", "steps_to_target_std"})
    header.push_back(c);
  CsvTable summary(header);
  for (const auto& norm : cfg.norms) {
    const Agg& a = agg.at(norm);
    std::vector<std::string> row{norm, std::to_string(a.epochs_to.size()), std::to_string(a.diverged)};
    for (const auto* v : {&a.acc, &a.loss})
      for (auto& c : interval_values(*v)) row.push_back(c);
    for (const std::string& c : {std::to_string(a.reached), fmt(mean_of(a.epochs_to)), fmt(mean_of(a.steps_to)),
                                 fmt(a.reached > 1 ? std_of(a.steps_to) : NAN)})
      row.push_back(c);
    summary.add_row(row);
  }
  runs_csv.write(ctx.out / "runs.csv");
  write_run_records(runs, ctx.dataset, use_val, ctx.out);
  summary.write(ctx.out / "summary.csv");
  write_why_tables(runs, cfg.norms, ctx.dataset, ctx.out);
}

// The loss curve (binned to about 100 points per run) and the test accuracy per epoch of one
// norm, each the mean over seeds with the 95% confidence interval of that mean (2+ seeds), in the
// norm's style.
std::pair<Series, Series> curves(const std::vector<RunResult>& runs, const std::string& norm, int64_t bin) {
  std::map<int64_t, std::vector<double>> by_bin, by_epoch;  // bin or epoch -> per-seed values
  for (const RunResult& r : runs) {
    if (r.config.model.norm != norm) continue;
    std::map<int64_t, std::pair<double, int>> bins;
    for (const auto& s : r.steps) {
      auto& b = bins[s.step / bin];
      b.first += s.loss, b.second += 1;
    }
    for (auto& [k, v] : bins) by_bin[k].push_back(v.first / v.second);
    for (const auto& e : r.epochs) by_epoch[e.epoch].push_back(e.test_acc);
  }
  Series sl{display_name(norm)}, sa{display_name(norm)};
  sl.style = sa.style = norm_style(norm);
  for (auto& [k, v] : by_bin) add_mean_point(sl, double(k * bin + bin / 2), v);
  for (auto& [k, v] : by_epoch) add_mean_point(sa, double(k), v);
  return {sl, sa};
}

// Loss curves, test accuracy, activations and gradient norms; returns the plots written. The
// titles' seed counts and intervals are added by render_plot / render_panels from the data.
std::vector<std::string> compare_plots(const CompareConfig& cfg, const std::vector<RunResult>& runs, int64_t spr,
                                       const StudyContext& ctx) {
  if (!gnuplot_available()) return {};
  const ScoreText sc = score_text(cfg.base);
  PlotSpec loss{"Training loss", "step", sc.loss};
  PlotSpec acc{"Test " + sc.name + " per epoch", "epoch", "test " + sc.name};
  acc.integer_x = true;
  acc.percent_y = sc.percent;
  acc.error_bars = true;  // at measured epochs only: a band between epochs would draw what was not measured
  for (const auto& norm : cfg.norms) {
    auto [sl, sa] = curves(runs, norm, std::max<int64_t>(1, spr / 100));
    loss.series.push_back(sl);
    acc.series.push_back(sa);
  }
  loss.log_y = LogY::if_wide;
  loss.dense = true;
  std::vector<std::string> plots;
  if (render_plot(loss, ctx.out, "loss_curves")) plots.push_back("loss_curves");
  if (render_plot(acc, ctx.out, "test_accuracy")) plots.push_back("test_accuracy");
  // Per hidden layer: mean and std before and after the norm; per weight: its gradient norm.
  if (render_panels("Activations before (dashed) and after (solid) the norm",
                    activation_panels(runs, cfg.norms), 2, ctx.out, "activations"))
    plots.push_back("activations");
  if (render_panels("Gradient norm of each weight", grad_norm_panels(runs, cfg.norms), 2,
                    ctx.out, "grad_norms"))
    plots.push_back("grad_norms");
  for (const auto& [stem, spec] : input_grad_plots(runs, cfg.norms))  // a sequence model's
    if (render_plot(spec, ctx.out, stem)) plots.push_back(stem);
  return plots;
}

// The landscape probes' plots (report/why.h); returns those written.
std::vector<std::string> why_plots_written(const CompareConfig& cfg, const std::vector<RunResult>& runs,
                                           const StudyContext& ctx) {
  if (!gnuplot_available()) return {};
  std::vector<std::string> plots;
  for (const WhyPlot& p : why_plots(runs, cfg.norms))
    if (render_panels(p.title, p.panels, p.cols, ctx.out, p.stem)) plots.push_back(p.stem);
  return plots;
}

// The most accurate norm, those not distinguishable from it, and each other norm's difference to
// it with its interval and Welch's t-test over seeds.
std::string accuracy_reading(const CompareConfig& cfg, const std::map<std::string, Agg>& agg, const ScoreText& sc) {
  std::vector<std::vector<double>> acc;
  for (const auto& norm : cfg.norms) acc.push_back(agg.at(norm).acc);
  const Units u = score_units(sc);
  const Ranking r = rank_against_best(acc, u);
  if (!r.found()) return "No run finished. ";
  const size_t best = r.best();
  std::ostringstream md;
  md << "Highest mean final test " << sc.name << ": " << display_name(cfg.norms[best]) << " ("
     << interval_cell(acc[best], u) << (sc.percent ? "%" : "") << ")";
  std::vector<std::string> others;
  for (const Ranking::Other& o : r.others)
    if (o.finite) others.push_back(display_name(cfg.norms[o.index]) + " " + o.difference);
  if (!others.empty()) {
    md << "; each other norm minus it: ";
    for (size_t i = 0; i < others.size(); ++i) md << (i ? "; " : "") << others[i];
  }
  md << ". ";
  if (r.tied.size() > 1) {
    std::vector<std::string> names;
    for (size_t i : r.tied) names.push_back(display_name(cfg.norms[i]));
    md << tied_sentence(names, cfg.seeds.size());
  } else if (cfg.norms.size() > 1) {
    md << display_name(cfg.norms[best]) << " is distinguishably the most accurate (Welch's t-test, p < 0.05 against "
       << "every other norm). ";
  }
  return md.str();
}

// Which norms reach the target first in every seed (steps as checked), with the runner-up's
// difference tested.
std::string target_reading(const CompareConfig& cfg, const std::map<std::string, Agg>& agg, const ScoreText& sc) {
  const std::string target = (sc.percent ? "" : sc.name + " ") + sc.format(cfg.target_accuracy);
  std::vector<std::string> fastest;  // the norms that reached the target in every seed in the fewest steps
  std::vector<std::pair<double, std::string>> all;  // mean steps of every norm that reached it in every seed
  double fastest_steps = INFINITY;
  for (const auto& norm : cfg.norms) {
    const Agg& a = agg.at(norm);
    if (a.reached != static_cast<int>(cfg.seeds.size())) continue;
    const double s = mean_of(a.steps_to);
    all.emplace_back(s, norm);
    if (s < fastest_steps) fastest_steps = s, fastest.clear();
    if (s == fastest_steps) fastest.push_back(norm);
  }
  std::ostringstream md;
  if (fastest.size() == 1) {
    md << "Fastest to reach " << target << " in every seed: " << display_name(fastest[0]) << " ("
       << fmt(fastest_steps, 5) << " steps on average";
    std::sort(all.begin(), all.end());
    if (all.size() > 1)
      md << "; the next, " << display_name(all[1].second) << ", minus it: "
         << difference_text(agg.at(all[1].second).steps_to, agg.at(fastest[0]).steps_to, Units{1, 0, " steps"});
    md << "). ";
  } else if (fastest.size() > 1) {
    std::vector<std::string> names;
    for (const auto& n : fastest) names.push_back(display_name(n));
    std::string joined = join_names(names);
    joined[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(joined[0])));  // starts the sentence
    md << joined << " reach " << target << " in every seed after the same number of steps ("
       << fmt(fastest_steps, 5) << " on average): "
       << (cfg.base.eval_every > 0 ? "the target is checked every " + count_of(cfg.base.eval_every, "step") +
                                         " (`--eval-every`), so runs that reach it between two checks tie. "
                                   : std::string("the target is checked at the end of each epoch, so runs that reach it "
                                                 "within the same epoch tie (`--eval-every N` checks every N steps). "));
  } else {
    md << "No norm reached " << target << " in every seed. ";
  }
  return md.str();
}

std::string reading(const CompareConfig& cfg, const std::vector<RunResult>& runs, const std::map<std::string, Agg>& agg) {
  const ScoreText sc = score_text(cfg.base);
  std::ostringstream md;
  md << "**Reading.** " << accuracy_reading(cfg, agg, sc) << target_reading(cfg, agg, sc)
     << activation_reading(runs, cfg.norms) << grad_norm_reading(runs, cfg.norms)
     << input_grad_reading(runs, cfg.norms);
  if (cfg.seeds.size() > 1)
    md << "Intervals are 95% confidence intervals of the mean over seeds (Student t); differences are tested with "
          "Welch's t-test over seeds (unequal variances).";
  else
    md << "With one seed there is no interval and no test: run more seeds (`--seeds 0,1,2`) to tell norms apart.";
  return md.str() + "\n";
}

std::string compare_markdown(const CompareConfig& cfg, const std::vector<RunResult>& runs,
                             const std::map<std::string, Agg>& agg, const StudyContext& ctx, bool use_val,
                             const std::vector<std::string>& plots, const std::vector<std::string>& why) {
  const TrainConfig& b = cfg.base;
  const ScoreText sc = score_text(b);
  const auto pct = [&](double v) { return sc.format(v); };
  std::ostringstream md;
  md << "Model " << model_text(b.model) << ", data: " << ctx.dataset << ". "
     << optimizer_text(b) << ", batch " << b.batch_size << ", " << count_of(b.epochs, "epoch")
     << ", schedule " << b.schedule << " with " << count_of(b.warmup_steps, "warmup step") << "; "
     << count_of(static_cast<int64_t>(cfg.seeds.size()), "seed") << " per norm"
     << (cfg.seeds.size() > 1 ? " (tables: mean ± 95% confidence interval over the seeds)" : "") << ". Target " << sc.name << " " << pct(cfg.target_accuracy) << " on the "
     << (use_val ? "validation set" : "test set (there is no validation set: `--val-fraction` 0)")
     << (b.eval_every > 0 ? ", checked after every epoch and every " + count_of(b.eval_every, "step") + " (evals.csv)"
                          : ", checked after every epoch")
     << ".\n\n";
  if (!ctx.defaults_note.empty()) md << ctx.defaults_note << "\n\n";
  md << norm_notes(cfg.norms);
  md << "| norm | final test " << sc.name << sc.unit() << " | final test loss | reached target | epochs to target | steps to target | diverged |\n";
  md << "|---|---|---|---|---|---|---|\n";
  for (const auto& norm : cfg.norms) {
    const Agg& a = agg.at(norm);
    md << "| " << display_name(norm) << " | " << pm(a.acc, score_units(sc)) << " | "
       << pm(a.loss, Units{1, 4, ""}) << " | " << a.reached << "/" << a.epochs_to.size() << " | "
       << mean_or_dash(a.epochs_to, 3) << " | " << mean_or_dash(a.steps_to, 5) << " | " << a.diverged << " |\n";
  }
  md << "\n" << image_links(plots) << reading(cfg, runs, agg);
  const std::string why_md = why_markdown(runs, cfg.norms, why, cfg.seeds.size());
  if (!why_md.empty()) md << "\n" << why_md;
  return md.str();
}

}  // namespace

std::vector<CheckedRun> compare_runs(const CompareConfig& cfg, const Splits& data) {
  if (cfg.norms.empty() || cfg.seeds.empty()) throw Error("compare: needs at least one norm and one seed");
  std::vector<CheckedRun> configs;
  for (const auto& norm : cfg.norms) {
    TrainConfig c = cfg.base;
    c.model.norm = norm;
    for (uint64_t seed : cfg.seeds) {
      c.seed = seed;
      configs.push_back(check_run(c, data));
    }
  }
  return configs;
}

Report run_compare(const CompareConfig& cfg, const Splits& data, const StudyContext& ctx) {
  return run_compare(cfg, compare_runs(cfg, data), data, ctx);
}

Report run_compare(const CompareConfig& cfg, const std::vector<CheckedRun>& configs, const Splits& data,
                   const StudyContext& ctx) {
  const Runs runs = train_and_record(
      configs, data, ctx,
      [](const TrainConfig& c) { return "compare: norm " + c.model.norm + ", seed " + std::to_string(c.seed); },
      [sc = score_text(cfg.base)](const RunResult& r) {
        return r.diverged ? "diverged at step " + std::to_string(r.diverged_step)
                          : "test " + sc.name + " " + sc.format(final_epoch(r).test_acc) + ", test loss " +
                                fmt(final_epoch(r).test_loss, 4);
      });
  const bool use_val = data.validation.size() > 0;
  const auto agg = aggregate(cfg, runs.results, use_val);
  write_tables(cfg, runs.results, agg, ctx, use_val);
  const auto plots = compare_plots(cfg, runs.results, steps_per_run(cfg.base, data), ctx);
  const auto why = why_plots_written(cfg, runs.results, ctx);
  std::string title = "Convergence: ";
  for (size_t i = 0; i < cfg.norms.size(); ++i) title += (i ? " vs " : "") + display_name(cfg.norms[i]);
  const nlohmann::json man = manifest(ctx,
                                      {{"study", "compare"}, {"base", to_json(cfg.base)}, {"norms", cfg.norms},
                                       {"seeds", cfg.seeds}, {"target_accuracy", cfg.target_accuracy}},
                                      runs.wall_seconds);
  Report rep = write_study_report(
      ctx, runs, "compare", {title, compare_markdown(cfg, runs.results, agg, ctx, use_val, plots, why)}, man);
  if (has_probes(runs.results))
    for (const std::string& n : cfg.norms) rep.why[n] = why_values(runs.results, n);
  return rep;
}

}  // namespace normlab::experiments::studies
