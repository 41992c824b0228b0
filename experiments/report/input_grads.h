// The gradient that reaches each time step's input in a sequence model's runs (InputGradNorm,
// recorded every --stats-every steps): plots of its seed means with 95% intervals, and the
// report's sentences, every number computed from the runs.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "experiments/report/plot.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments::report {

// Two plots as (file stem, spec), one line per norm in the norm's style; empty when no run
// recorded input gradients:
//   "input_grad_first_step": the gradient reaching the first time step's input against the
//     training step (at each recorded step, the mean over seeds; band = its 95% CI with 2+ seeds);
//   "input_grad_by_time_step": the gradient reaching step t's input against t, each run's mean over
//     its recorded steps, then the mean over seeds (error bars = 95% CI with 2+ seeds).
// Both log y when the values span more than a decade.
std::vector<std::pair<std::string, PlotSpec>> input_grad_plots(const std::vector<RunResult>& runs,
                                                               const std::vector<std::string>& norms);

// For the report: what the gradient is, then per norm the log10 of the first time step's gradient
// (each seed's mean over its recorded steps; mean ± 95% CI over seeds) and how many decades below
// the last step's it is; then the norm that passes the most gradient to the first step, and every
// other norm's difference to it in decades with Welch's t-test ("not distinguishable" when p >=
// 0.05). Empty without input gradients.
std::string input_grad_reading(const std::vector<RunResult>& runs, const std::vector<std::string>& norms);

}  // namespace normlab::experiments::report
