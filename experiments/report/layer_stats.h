// Activation statistics and gradient norms of the comparison's runs, averaged over seeds: as plot
// panels (per hidden layer, per weight matrix) and as sentences for the report, computed from the runs.
#pragma once
#include <string>
#include <vector>

#include "experiments/report/plot.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments::report {

// Two panels per hidden layer, row by row, titled by the layer that opens it ("Conv2d 1",
// "Linear 2", from the model's layer list): the mean and the std of its activations over steps,
// before the norm (dashed: that layer's output) and after it (solid), in each norm's style
// (norm_style), each the mean over seeds (n per point; no interval). The std's y axis is
// logarithmic only when it spans more than a decade (LogY::if_wide).
// Empty if no run recorded activation statistics.
std::vector<PlotSpec> activation_panels(const std::vector<RunResult>& runs, const std::vector<std::string>& norms);

// One panel per weight (the Conv2d and Linear layers in the model's order, the output Linear
// last), titled by its layer's name as the model's layer list reads ("Conv2d 1 weight", "Conv2d 2
// weight", "output Linear weight"): its gradient norm over steps, one line per norm in the norm's
// style (mean over seeds; log y only when it spans more than a decade). Empty if no run recorded
// gradient norms.
std::vector<PlotSpec> grad_norm_panels(const std::vector<RunResult>& runs, const std::vector<std::string>& norms);

// For the report: per norm, whether the norm's output stays centred with unit std (|mean| and
// |std - 1| at most `tolerance` at every recorded step, layer and seed) and the ranges measured;
// without a norm, the range of the hidden pre-activations' std. Empty without statistics.
std::string activation_reading(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                               double tolerance = 0.1);

// For the report: per norm, the mean gradient norm of the first and of the output Linear weight
// (over recorded steps and seeds), and which norm gives the largest and smallest first-layer
// gradients, their difference tested over seeds (Welch). Empty without gradient norms.
std::string grad_norm_reading(const std::vector<RunResult>& runs, const std::vector<std::string>& norms);

}  // namespace normlab::experiments::report
