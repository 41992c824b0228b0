// Why a norm helps: the landscape probes of a comparison summarized per norm over seeds, the seed
// documents' claims tested (Welch), and the plots of the measures over training.
#include "experiments/report/why.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>

#include "base/error.h"
#include "experiments/models/archs.h"
#include "experiments/models/language_model.h"
#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

namespace {

constexpr const char* kPoints[] = {"init", "quarter", "half", "end"};

// The step measures of the report's tables and claims: key (why_values), column, lower is the claim.
struct Measure {
  const char* key;
  const char* column;
};
constexpr Measure kStepMeasures[] = {
    {"ics", "ICS ‖G − G′‖"},
    {"ics_relative", "ICS / ‖G‖"},
    {"cosine", "cosine(G, G′)"},
    {"loss_variation", "loss variation"},
    {"grad_predictiveness", "gradient predictiveness"},
    {"beta_smoothness", "β-smoothness"},
};

// Units for a measure whose values span scales: 3 significant digits of the largest |mean| among
// the norms (cosines: 4 decimals, their differences are small).
Units units_for(const std::string& key, const std::vector<std::vector<double>>& per_norm) {
  if (key == "cosine") return Units{1, 4, ""};
  double m = 0;
  for (const auto& v : per_norm)
    if (std::isfinite(mean_of(v))) m = std::max(m, std::fabs(mean_of(v)));
  if (!(m > 0)) return Units{1, 4, ""};
  return Units{1, std::clamp(2 - static_cast<int>(std::floor(std::log10(m))), 0, 10), ""};
}

// The norm a run compares: its variant (a GPT's "layer-post") or its model's norm.
const std::string& norm_of(const RunResult& r) { return r.variant.empty() ? r.config.model.norm : r.variant; }

std::string shown(const WhyLook& look, const std::string& n) { return look.display ? look.display(n) : display_name(n); }

bool probed(const RunResult& r) { return !r.shifts.empty() || !r.landscape.empty() || !r.curvature.empty(); }

// The number of layers the runs' ICS was measured over, and their names for the plots: the
// model's weighted layers when they match one to one (MLP, CNN), the records' own names when
// they are words, not a parameter's name (a GPT's "block 2"), else "layer k of n".
std::vector<std::string> layer_names(const std::vector<RunResult>& runs) {
  int n = 0;
  for (const RunResult& r : runs)
    for (const ShiftRecord& s : r.shifts) n = std::max(n, s.layer + 1);
  std::vector<std::string> names(static_cast<size_t>(n));
  for (const RunResult& r : runs)
    for (const ShiftRecord& s : r.shifts) names[static_cast<size_t>(s.layer)] = s.name;
  if (n > 0 && std::none_of(names.begin(), names.end(),
                            [](const std::string& x) { return x.empty() || x.find('.') != std::string::npos; }))
    return names;
  names.clear();
  try {
    if (!runs.empty()) names = weight_names(runs.front().config.model);
  } catch (const Error&) {
  }
  if (static_cast<int>(names.size()) == n) return names;
  names.clear();
  for (int i = 0; i < n; ++i) names.push_back("layer " + std::to_string(i + 1) + " of " + std::to_string(n));
  return names;
}

// Per step, the values of every run of `norm` (one per seed): the mean over the seeds, its band.
Series band(const std::string& norm, const std::map<int64_t, std::vector<double>>& by_step, const WhyLook& look) {
  Series s{shown(look, norm)};
  s.style = look.style ? look.style(norm) : norm_style(norm);
  for (const auto& [step, v] : by_step) add_mean_point(s, double(step), v);
  return s;
}

// One landscape record per probed step (the summaries repeat on each eta's row).
std::map<int64_t, const LandscapeRecord*> landscape_steps(const RunResult& r) {
  std::map<int64_t, const LandscapeRecord*> by;
  for (const LandscapeRecord& l : r.landscape) by.emplace(l.step, &l);
  return by;
}

std::string momentum_note(const TrainConfig& c) {
  if (c.optimizer == "sgd" && c.momentum == 0) return "";
  return " The optimizer's step is not −lr·g here (" +
         std::string(c.optimizer == "sgd" ? "SGD with momentum " + fmt(c.momentum) : c.optimizer) +
         "): the probes still move along −g, the batch gradient.";
}

}  // namespace

RunWhy summarize_probes(const RunResult& r) {
  std::map<int64_t, std::vector<const ShiftRecord*>> by_step;
  for (const ShiftRecord& s : r.shifts)
    if (s.layer > 0) by_step[s.step].push_back(&s);
  std::vector<double> ics, rel, cos;  // per probed step: the mean over its layers
  for (const auto& [step, layers] : by_step) {
    std::vector<double> a, b, c;
    for (const ShiftRecord* s : layers) a.push_back(s->ics), b.push_back(s->relative), c.push_back(s->cosine);
    ics.push_back(mean_of(a)), rel.push_back(mean_of(b)), cos.push_back(mean_of(c));
  }
  std::vector<double> lv, gp, beta;
  for (const auto& [step, l] : landscape_steps(r))
    lv.push_back(l->loss_variation), gp.push_back(l->grad_predictiveness), beta.push_back(l->beta_smoothness);
  return {mean_of(ics), mean_of(rel), mean_of(cos), mean_of(lv), mean_of(gp), mean_of(beta)};
}

std::string verdict(const std::vector<double>& norm, const std::vector<double>& reference, bool lower_holds) {
  const WelchTest w = welch_test(norm, reference);
  if (!std::isfinite(w.p)) return "not tested";
  if (!w.distinguishable()) return "not distinguishable";
  return (w.diff < 0) == lower_holds ? "holds" : "reversed";
}

bool has_probes(const std::vector<RunResult>& runs) {
  return std::any_of(runs.begin(), runs.end(), probed);
}

std::map<std::string, std::vector<double>> why_values(const std::vector<RunResult>& runs, const std::string& norm) {
  std::map<std::string, std::vector<double>> v;
  for (const RunResult& r : runs) {
    if (norm_of(r) != norm || r.diverged || !probed(r)) continue;
    const RunWhy w = summarize_probes(r);
    if (!r.shifts.empty())
      v["ics"].push_back(w.ics), v["ics_relative"].push_back(w.relative), v["cosine"].push_back(w.cosine);
    if (!r.landscape.empty())
      v["loss_variation"].push_back(w.loss_variation), v["grad_predictiveness"].push_back(w.grad_predictiveness),
          v["beta_smoothness"].push_back(w.beta);
    for (const CurvatureRecord& c : r.curvature)
      v["eigenvalue_" + c.point].push_back(std::fabs(c.eigenvalue)), v["trace_" + c.point].push_back(c.trace);
    if (!r.epochs.empty()) v["final_score"].push_back(final_epoch(r).test_acc);
    else if (const EvalRecord* e = final_eval(r)) v["final_score"].push_back(bits(e->val_loss));
  }
  return v;
}

std::vector<WhyPlot> why_plots(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                               const WhyLook& look) {
  std::vector<WhyPlot> plots;
  const std::vector<std::string> names = layer_names(runs);
  WhyPlot ics{"why_ics", "Internal covariate shift per layer, ‖G − G′‖ (left) and cosine(G, G′) (right)", {}, 2};
  for (int layer = 1; layer < static_cast<int>(names.size()); ++layer)
    for (const bool cosine : {false, true}) {
      PlotSpec p{names[static_cast<size_t>(layer)] + (cosine ? ": cosine(G, G′)" : ": ICS ‖G − G′‖"), "step",
                 cosine ? "cosine" : "‖G − G′‖"};
      p.log_y = cosine ? LogY::off : LogY::if_wide;
      if (cosine) p.y_max = 1.05;  // a cosine is at most 1 (a band may reach past it)
      for (const std::string& n : norms) {
        std::map<int64_t, std::vector<double>> by_step;
        for (const RunResult& r : runs)
          if (norm_of(r) == n)
            for (const ShiftRecord& s : r.shifts)
              if (s.layer == layer) by_step[s.step].push_back(cosine ? s.cosine : s.ics);
        if (!by_step.empty()) p.series.push_back(band(n, by_step, look));
      }
      if (!p.series.empty()) ics.panels.push_back(p);
    }
  if (!ics.panels.empty()) plots.push_back(ics);
  WhyPlot land{"why_landscape", "The loss along −g over training: loss variation, gradient predictiveness, β-smoothness",
               {}, 3};
  struct Pick {
    const char* title;
    const char* y;
    double LandscapeRecord::*field;
  };
  for (const Pick& k : {Pick{"Loss variation", "max − min of L(w − ηg)", &LandscapeRecord::loss_variation},
                        Pick{"Gradient predictiveness", "max ‖g − g(w − ηg)‖", &LandscapeRecord::grad_predictiveness},
                        Pick{"Effective β-smoothness", "max ‖g − g(w − ηg)‖ / (η‖g‖)",
                             &LandscapeRecord::beta_smoothness}}) {
    PlotSpec p{k.title, "step", k.y};
    p.log_y = LogY::if_wide;
    for (const std::string& n : norms) {
      std::map<int64_t, std::vector<double>> by_step;
      for (const RunResult& r : runs)
        if (norm_of(r) == n)
          for (const auto& [step, l] : landscape_steps(r)) by_step[step].push_back(l->*k.field);
      if (!by_step.empty()) p.series.push_back(band(n, by_step, look));
    }
    if (!p.series.empty()) land.panels.push_back(p);
  }
  if (!land.panels.empty()) plots.push_back(land);
  WhyPlot curv{"why_curvature", "Curvature of the probe batch's loss at four points of training", {}, 2};
  for (const bool trace : {false, true}) {
    PlotSpec p{trace ? "Hessian trace (Hutchinson)" : "Top Hessian eigenvalue: its magnitude", "step",
               trace ? "trace" : "|eigenvalue|"};
    p.error_bars = true;
    p.log_y = LogY::if_wide;
    for (const std::string& n : norms) {
      std::map<int64_t, std::vector<double>> by_step;
      for (const RunResult& r : runs)
        if (norm_of(r) == n)
          for (const CurvatureRecord& c : r.curvature)
            by_step[c.step].push_back(trace ? c.trace : std::fabs(c.eigenvalue));
      if (!by_step.empty()) p.series.push_back(band(n, by_step, look));
    }
    if (!p.series.empty()) curv.panels.push_back(p);
  }
  if (!curv.panels.empty()) plots.push_back(curv);
  return plots;
}

void write_why_tables(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                      const std::string& dataset, const std::filesystem::path& dir, const WhyLook& look) {
  if (!has_probes(runs)) return;
  std::vector<std::string> keys;
  for (const Measure& m : kStepMeasures) keys.push_back(m.key);
  for (const char* kind : {"eigenvalue_", "trace_"})
    for (const char* p : kPoints) keys.push_back(std::string(kind) + p);
  std::vector<std::string> header{"dataset", "norm"};
  for (const std::string& k : keys)
    for (auto& c : interval_columns(k)) header.push_back(c);
  CsvTable table(header);
  // The claims: each norm against no norm (ICS lower, cosine higher, the landscape's measures
  // lower), noisy BatchNorm against BatchNorm (its ICS larger).
  CsvTable claims({"dataset", "claim", "norm", "reference", "measure", "difference", "ci95_low", "ci95_high", "p",
                   "verdict"});
  std::map<std::string, std::map<std::string, std::vector<double>>> values;
  for (const std::string& n : norms) values[n] = why_values(runs, n);
  const auto add_claim = [&](const std::string& claim, const std::string& n, const std::string& ref,
                             const std::string& key, bool lower_holds) {
    const std::vector<double>& a = values[n][key];
    const std::vector<double>& b = values[ref][key];
    if (a.empty() || b.empty()) return;
    const WelchTest w = welch_test(a, b);
    claims.add_row({dataset, claim, n, ref, key, fmt(w.diff), fmt(w.low), fmt(w.high), fmt(w.p),
                    verdict(a, b, lower_holds)});
  };
  for (const std::string& n : norms) {
    std::vector<std::string> row{dataset, n};
    for (const std::string& k : keys)
      for (auto& c : interval_values(values[n][k])) row.push_back(c);
    table.add_row(row);
    if (n == "none" || !values.count("none")) continue;
    add_claim("reduces internal covariate shift", n, "none", "ics", true);
    add_claim("reduces internal covariate shift", n, "none", "ics_relative", true);
    add_claim("reduces internal covariate shift", n, "none", "cosine", false);
    add_claim("makes the steps more even", n, "none", "loss_variation", true);
    add_claim("makes the steps more even", n, "none", "grad_predictiveness", true);
    add_claim("makes the steps more even", n, "none", "beta_smoothness", true);
    for (const char* p : kPoints) add_claim("lowers the top eigenvalue", n, "none", std::string("eigenvalue_") + p, true);
  }
  if (values.count("noisybatch") && values.count("batch")) {
    add_claim("noisy BatchNorm trains as well as BatchNorm", "noisybatch", "batch", "final_score",
              look.score_lower_is_better);
    add_claim("noisy BatchNorm has the larger internal covariate shift", "noisybatch", "batch", "ics", false);
  }
  table.write(dir / "why.csv");
  claims.write(dir / "why_claims.csv");
}

std::string why_markdown(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                         const std::vector<std::string>& plots, size_t seeds, const WhyLook& look) {
  if (!has_probes(runs)) return "";
  const TrainConfig& c = runs.front().config;
  std::map<std::string, std::map<std::string, std::vector<double>>> values;
  int diverged = 0;
  for (const std::string& n : norms) values[n] = why_values(runs, n);
  for (const RunResult& r : runs) diverged += r.diverged;
  std::ostringstream md;
  md << "### Why: internal covariate shift and the landscape\n\n";
  const bool steps = c.probe_every > 0;
  if (steps)
    md << "Probed every " << count_of(c.probe_every, "step") << " on that step's batch (a BatchNorm in training mode "
       << "with the batch's statistics). **Internal covariate shift** (Santurkar et al. 2018, Definition 2.1): for "
          "each layer i ("
       << look.layers << "), "
          "G is the gradient of the batch loss with respect to the layer's parameters and G′ the same after only the "
          "layers before it took the step's update; ICS = ‖G − G′‖, also divided by ‖G‖ and as the cosine of G and "
          "G′ (1: no shift), averaged over the layers that have one before them (the first has none: 0). **The "
          "landscape along the gradient**: the loss and gradient at w − ηg for η = lr × 0.25, 0.5, 1, 2, 4 on the "
          "same batch; loss variation = max − min of the losses, gradient predictiveness = max ‖g − g(w − ηg)‖, "
          "effective β-smoothness = max ‖g − g(w − ηg)‖ / (η‖g‖)."
       << momentum_note(c) << " A run's value is the mean over its probes; the table gives the mean ± 95% CI over "
       << "the seeds" << (diverged ? " (the " + count_of(diverged, "run") + " that diverged left out)" : "") << ".\n\n";
  if (steps) {
    md << "| norm | runs |";
    for (const Measure& m : kStepMeasures) md << " " << m.column << " |";
    md << "\n|---|---|";
    for (size_t i = 0; i < std::size(kStepMeasures); ++i) md << "---|";
    md << "\n";
    for (const std::string& n : norms) {
      const auto& v = values[n];
      const auto it = v.find("ics");
      md << "| " << shown(look, n) << " | " << (it == v.end() ? 0 : it->second.size()) << " |";
      for (const Measure& m : kStepMeasures) {
        std::vector<std::vector<double>> all;
        for (const std::string& o : norms) all.push_back(values[o][m.key]);
        const auto f = v.find(m.key);
        md << " " << (f == v.end() ? "-" : interval_cell(f->second, units_for(m.key, all))) << " |";
      }
      md << "\n";
    }
    md << "\n";
  }
  // The claims against no norm.
  if (values.count("none") && norms.size() > 1) {
    md << "**The claims, each norm against no norm** (the verdict from Welch's t-test over seeds at 95%: holds, not "
          "distinguishable or reversed; the difference norm − none with its 95% interval):\n\n"
       << "| norm | \"reduces internal covariate shift\": ‖G − G′‖ | the same: cosine(G, G′) higher | \"makes the steps more "
          "even\": loss variation | \"a smoother landscape\": β-smoothness |\n|---|---|---|---|---|\n";
    const auto cell = [&](const std::string& n, const std::string& key, bool lower_holds) {
      const auto& a = values[n][key];
      const auto& b = values["none"][key];
      if (a.empty() || b.empty()) return std::string("-");
      std::vector<std::vector<double>> all;
      for (const std::string& o : norms) all.push_back(values[o][key]);
      return verdict(a, b, lower_holds) + ": " + difference_cell(a, b, units_for(key, all));
    };
    for (const std::string& n : norms) {
      if (n == "none") continue;
      md << "| " << shown(look, n) << " | " << cell(n, "ics", true) << " | " << cell(n, "cosine", false) << " | "
         << cell(n, "loss_variation", true) << " | " << cell(n, "beta_smoothness", true) << " |\n";
    }
    md << "\n";
  } else if (steps) {
    md << "Without `none` among the norms there is no reference for the claims (\"the norm reduces internal covariate "
          "shift\", \"makes the steps more even\"): add it to `--norms`.\n\n";
  }
  if (values.count("noisybatch") && values.count("batch")) {
    const ScoreText sc = score_text(c);
    const auto& na = values["noisybatch"]["final_score"];
    const auto& ba = values["batch"]["final_score"];
    const auto& ni = values["noisybatch"]["ics"];
    const auto& bi = values["batch"]["ics"];
    const std::string as_well = verdict(na, ba, look.score_lower_is_better);
    md << "**Noisy BatchNorm against BatchNorm.** "
       << (look.score.empty() ? "Final test " + sc.name : capitalized(look.score)) << " noisy − plain: "
       << difference_text(na, ba, !look.score.empty() ? look.score_units : sc.percent ? kPercent : Units{1, 4, ""})
       << "; ";
    if (as_well == "not distinguishable" || as_well == "holds")
      md << "it trains as well as BatchNorm" << (as_well == "holds" ? " (better)" : " (not distinguishable)");
    else if (as_well == "reversed")
      md << "it trains worse than BatchNorm";
    else
      md << "not tested";
    if (!ni.empty() && !bi.empty()) {
      const std::string larger = verdict(ni, bi, false);
      md << ". ICS ‖G − G′‖ noisy − plain: " << difference_text(ni, bi, units_for("ics", {ni, bi})) << "; its ICS is "
         << (larger == "holds"        ? "larger"
             : larger == "reversed"   ? "smaller"
             : larger == "not tested" ? "not compared (not tested)"
                                      : "not distinguishable from BatchNorm's");
    }
    md << ". (The noise: per unit, the output is multiplied by s ~ U[0.5, 2) and shifted by m ~ U[−0.5, 1.5), drawn "
          "anew at every training step.)\n\n";
  }
  // The curvature at the four points.
  bool any_curvature = false;
  for (const RunResult& r : runs) any_curvature = any_curvature || !r.curvature.empty();
  if (any_curvature) {
    int64_t not_converged = 0, records = 0;
    std::vector<double> iterations;
    std::map<std::string, std::pair<int, int>> negative;  // norm -> (negative eigenvalues, records)
    for (const RunResult& r : runs)
      for (const CurvatureRecord& k : r.curvature) {
        ++records, not_converged += !k.converged, iterations.push_back(double(k.iterations));
        auto& [neg, all] = negative[norm_of(r)];
        neg += k.eigenvalue < 0, ++all;
      }
    std::vector<std::string> with_negative;
    for (const std::string& n : norms)
      if (negative[n].first > 0)
        with_negative.push_back(shown(look, n) + " " + std::to_string(negative[n].first) + " of " +
                                std::to_string(negative[n].second));
    md << "**Curvature** of the loss of the first " << c.curvature_samples << " " << look.samples << " (BatchNorm with their "
       << "statistics), before the first step, at a quarter, a half and the end of training: the Hessian's eigenvalue "
          "of largest magnitude, as PyHessian reports it (power iteration on exact Hessian-vector products; stopped "
          "when the relative change falls below "
       << fmt(c.curvature_tol) << " or after " << c.curvature_iters << " products; its sign kept: "
       << fmt(median_of(iterations), 3) << " products in the median, " << not_converged << " of " << records
       << " not converged), and the trace (Hutchinson, " << c.trace_samples << " Rademacher samples). The table "
       << "and the plot give the eigenvalue's magnitude |λ|; "
       << (with_negative.empty() ? std::string("every one was positive")
                                 : "negative (the loss curves down most along it): " + join_names(with_negative))
       << " (curvature.csv keeps the signs).\n\n";
    md << "| norm |";
    for (const char* p : kPoints) md << " top |λ|: " << p << " |";
    for (const char* p : kPoints) md << " trace: " << p << " |";
    md << "\n|---|";
    for (int i = 0; i < 8; ++i) md << "---|";
    md << "\n";
    for (const std::string& n : norms) {
      md << "| " << shown(look, n) << " |";
      for (const char* kind : {"eigenvalue_", "trace_"})
        for (const char* p : kPoints) {
          const std::string key = std::string(kind) + p;
          std::vector<std::vector<double>> all;
          for (const std::string& o : norms) all.push_back(values[o][key]);
          const auto f = values[n].find(key);
          md << " " << (f == values[n].end() ? "-" : interval_cell(f->second, units_for(key, all))) << " |";
        }
      md << "\n";
    }
    md << "\n";
    if (values.count("none") && norms.size() > 1) {
      md << "\"The norm lowers the top eigenvalue\" (its magnitude) at the end, each norm against no norm: ";
      bool first = true;
      for (const std::string& n : norms) {
        if (n == "none") continue;
        const auto& a = values[n]["eigenvalue_end"];
        const auto& b = values["none"]["eigenvalue_end"];
        if (a.empty() || b.empty()) continue;
        md << (first ? "" : "; ") << shown(look, n) << " " << verdict(a, b, true) << ", "
           << difference_text(a, b, units_for("eigenvalue_end", {a, b}));
        first = false;
      }
      md << ".\n\n";
    }
  }
  if (seeds < 2) md << "With one seed no claim is tested: run more seeds (`--seeds 0,1,2`).\n\n";
  if (!plots.empty()) md << image_links(plots);
  md << "The probes' records: shifts.csv, landscape.csv, curvature.csv (per run); why.csv (per "
        "norm over seeds) and why_claims.csv (every claim's test).\n";
  return md.str();
}

}  // namespace normlab::experiments::report
