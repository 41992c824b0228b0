// The parts of `normlab sweep` that its report is made of (studies/sweep.cc runs it): the seeds'
// final accuracies at each sweep point, the plan of what is swept and evaluated how, and the
// plots and report text drawn from them (studies/sweep_report.cc).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "experiments/records/context.h"
#include "experiments/studies/study.h"

namespace normlab::experiments::studies::sweep_parts {

// The seeds' final accuracies of one norm at one sweep point (NaN for a run that diverged).
struct Point {
  double x;
  std::vector<double> acc, precise, batch;
  int diverged = 0;
};
using Points = std::map<std::string, std::vector<Point>>;  // norm -> points in sweep order

// What the sweep needs besides its configuration: where it sweeps, and which norms are also
// evaluated with other statistics than their running ones.
struct Plan {
  bool by_batch;
  size_t points;
  // In a batch-size sweep, the norms with batch statistics (in --norms order): evaluated with their
  // running statistics, precise population statistics and the test batches' own.
  std::vector<std::string> bns;
  double x(const SweepConfig& c, size_t i) const { return by_batch ? double(c.batch_sizes[i]) : c.lrs[i]; }
};

// The accuracy against the swept value (one line per norm, and BatchNorm's other evaluations) and
// BatchNorm's evaluation gap, written into ctx.out; returns the plots written.
std::vector<std::string> sweep_plots(const SweepConfig& cfg, const Plan& plan, const Points& pts,
                                     const StudyContext& ctx);
// The report's text: the protocol, the results table, the plots and the reading.
std::string sweep_markdown(const SweepConfig& cfg, const Plan& plan, const Points& pts, const StudyContext& ctx,
                           const std::vector<std::string>& plots);

}  // namespace normlab::experiments::studies::sweep_parts
