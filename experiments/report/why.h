// Why a norm helps, as a comparison's report reads the landscape probes (run/landscape.h): per
// norm over seeds, the internal covariate shift of the layers, the landscape along -g and the
// curvature at four points; the seed documents' claims tested against no norm ("the norm reduces
// internal covariate shift", "the norm makes the steps more even") and noisy BatchNorm against
// BatchNorm, each a verdict from Welch's t-test over seeds; the plots of the measures over training.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "experiments/report/claims.h"
#include "experiments/report/plot.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments::report {

// How a comparison names its norms and scores its runs. The classifiers' (the default): the norm
// registry's names and looks, the final test accuracy (or R²), higher better. A GPT comparison's
// variants ("layer-post") have their own names and looks, and its score is the final validation
// loss in bits per character, lower better. A run's norm is its variant when it has one
// (RunResult::variant), else its model's norm.
struct WhyLook {
  std::function<std::string(const std::string&)> display;  // empty: display_name
  std::function<Style(const std::string&)> style;           // empty: norm_style
  bool score_lower_is_better = false;
  std::string score;  // "" : "final test accuracy" / "R²" (score_text); else its words
  Units score_units{100, 2, ""};
  // What a layer of the ICS is, and what the curvature's batch holds.
  std::string layers = "a weight layer with the norm after it: its weight, bias and the norm's scale and shift";
  std::string samples = "training samples";
};

// One run's probes summarized, each the mean over its probed steps (NaN when it has none):
//   ics       ||G_i - G'_i|| averaged over the layers that have a predecessor (layer 1 has none:
//             its ICS is 0 by definition), relative: divided by ||G_i||, cosine: <G_i, G'_i> / ...;
//   loss_variation, grad_predictiveness, beta: the step's landscape summaries.
struct RunWhy {
  double ics = NAN, relative = NAN, cosine = NAN;
  double loss_variation = NAN, grad_predictiveness = NAN, beta = NAN;
};
RunWhy summarize_probes(const RunResult& r);

// A claim's verdict from the norm's values over seeds against the reference's: "holds" when the
// difference is distinguishable (Welch p < 0.05) in the claimed direction, "reversed" when
// distinguishable the other way, "not distinguishable", or "not tested" (fewer than 2 finite
// values on a side, or no spread on either). lower_holds: the claim is that the norm's values
// are lower.
std::string verdict(const std::vector<double>& norm, const std::vector<double>& reference, bool lower_holds);

// The measures of each norm's runs over seeds, by name: "ics", "ics_relative", "cosine",
// "loss_variation", "grad_predictiveness", "beta_smoothness", per curvature point
// "eigenvalue_<point>" (the magnitude |λ| of the top eigenvalue) and "trace_<point>", and
// "final_score" (the final test accuracy or R², or a language model's final validation bits per
// character). Runs that diverged or have no probes give
// nothing. Every value a seed's.
std::map<std::string, std::vector<double>> why_values(const std::vector<RunResult>& runs, const std::string& norm);

// Whether any run has probes (shifts, landscape or curvature records).
bool has_probes(const std::vector<RunResult>& runs);

// The plots (stem -> spec or panels) of the probes: "why_ics" (per layer with a predecessor, the
// ICS and the cosine over training), "why_landscape" (loss variation, gradient predictiveness and
// beta-smoothness over training), "why_curvature" (the top eigenvalue and the trace at the four
// points), each one line per norm, the mean over seeds with its 95% band (error bars for the
// curvature). Empty entries for measures no run recorded.
struct WhyPlot {
  std::string stem, title;
  std::vector<PlotSpec> panels;
  int cols = 2;
};
std::vector<WhyPlot> why_plots(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                               const WhyLook& look = {});

// why.csv (per norm, every measure's mean over seeds with its interval) and why_claims.csv (per
// claim, norm and measure: the difference to the reference with its Welch interval, p and
// verdict) into dir. Nothing without probes.
void write_why_tables(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                      const std::string& dataset, const std::filesystem::path& dir, const WhyLook& look = {});

// The report's "Why" section: what was measured, the table of the measures, the claims' verdicts
// and the curvature table, with the links of the plots written (why_plots' stems); "" without
// probes. seeds: the seeds per norm (one: nothing is tested).
std::string why_markdown(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                         const std::vector<std::string>& plots, size_t seeds, const WhyLook& look = {});

}  // namespace normlab::experiments::report
