// The experiment's cells and its reading (ddp_cells.h).
#include "experiments/studies/ddp_cells.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;

int ranks_of(const TrainConfig& c) { return c.distributed ? c.ranks : 1; }

double mean_acc(const Cells& cells, const Cell& k) {
  const auto it = cells.find(k);
  return it == cells.end() ? NAN : mean_of(it->second);
}

std::vector<std::string> other_norms(const DdpSweepConfig& cfg) {
  std::vector<std::string> v;
  for (const auto& n : cfg.norms)
    if (n != local_bn() && n != sync_bn()) v.push_back(n);
  return v;
}

bool has(const DdpSweepConfig& cfg, const std::string& n) {
  return std::find(cfg.norms.begin(), cfg.norms.end(), n) != cfg.norms.end();
}

namespace {

// Mean absolute difference in points between the cells of `norm` over w ranks and BatchNorm in
// one process at the per-rank batch (first) and at the global batch (second), over the per-rank
// batches where all three finished; NaN when there are none.
std::pair<double, double> distances(const DdpSweepConfig& cfg, const Cells& cells, const std::string& n, int w) {
  std::vector<double> per, glob;
  for (int64_t b : cfg.per_rank_batches) {
    const double a = mean_acc(cells, {n, w, b}), at_b = mean_acc(cells, {local_bn(), 1, b}),
                 at_g = mean_acc(cells, {local_bn(), 1, w * b});
    if (!std::isfinite(a) || !std::isfinite(at_b) || !std::isfinite(at_g)) continue;
    per.push_back(100 * std::abs(a - at_b));
    glob.push_back(100 * std::abs(a - at_g));
  }
  return {mean_of(per), mean_of(glob)};
}

// Whether BatchNorm in one process at b and at W*b are further apart than twice the seeds' largest
// std in the cells compared (and 0.5 points): closer than that, nothing can follow one of them. ""
// when they are; else the sentence that says they are not.
std::string too_close(const DdpSweepConfig& cfg, const Cells& cells, int w, bool& separable) {
  std::vector<double> apart;
  double spread = 0;
  for (int64_t b : cfg.per_rank_batches) {
    const double d = 100 * std::abs(mean_acc(cells, {local_bn(), 1, b}) - mean_acc(cells, {local_bn(), 1, w * b}));
    if (std::isfinite(d)) apart.push_back(d);
    for (const Cell& k : {Cell{local_bn(), 1, b}, Cell{local_bn(), 1, w * b}, Cell{local_bn(), w, b}, Cell{sync_bn(), w, b}})
      if (const auto it = cells.find(k); it != cells.end() && it->second.size() > 1 && std::isfinite(std_of(it->second)))
        spread = std::max(spread, 100 * std_of(it->second));
  }
  separable = !apart.empty() && mean_of(apart) >= std::max(2 * spread, 0.5);
  if (apart.empty() || separable) return "";
  return "BatchNorm in one process scores on average within " + fmt(mean_of(apart), 3) +
         " points at the per-rank and at the global batch, less than twice the seeds' largest std (" + fmt(spread, 3) +
         ") or 0.5 points, so with these settings and seeds the experiment cannot tell which batch local BatchNorm "
         "and SyncBatchNorm follow";
}

// What the cells say at W ranks, one clause each.
std::vector<std::string> said_at(const DdpSweepConfig& cfg, const Cells& cells, int w, bool one) {
  std::vector<std::string> said;
  bool separable = false;
  if (std::string s = too_close(cfg, cells, w, separable); !s.empty()) said.push_back(s);
  for (const std::string& n : {local_bn(), sync_bn()}) {
    if (!has(cfg, n) || !one) continue;
    const auto [d_per, d_glob] = distances(cfg, cells, n, w);
    if (!std::isfinite(d_per)) continue;
    said.push_back((n == local_bn() ? "BatchNorm with each rank's own statistics" : "SyncBatchNorm") +
                   std::string(" is on average ") + fmt(d_per, 3) +
                   " points from BatchNorm in one process at the per-rank batch and " + fmt(d_glob, 3) +
                   " points from it at the global batch" +
                   (!separable ? ""
                               : std::string(", so it behaves like BatchNorm at the ") +
                                     (d_per < d_glob ? "per-rank" : d_glob < d_per ? "global" : "per-rank and the global") +
                                     " batch"));
  }
  if (has(cfg, local_bn()) && has(cfg, sync_bn())) {
    const int64_t b = cfg.per_rank_batches.front();
    const auto sync = cells.find({sync_bn(), w, b}), local = cells.find({local_bn(), w, b});
    if (sync != cells.end() && local != cells.end() && std::isfinite(mean_of(sync->second)) &&
        std::isfinite(mean_of(local->second)))
      said.push_back("at per-rank batch " + std::to_string(b) + ", SyncBatchNorm minus BatchNorm with per-rank "
                     "statistics: " + difference_text(sync->second, local->second, kPercent));
  }
  for (const auto& n : other_norms(cfg)) {
    if (!one) break;
    double worst = NAN;
    for (int64_t b : cfg.per_rank_batches) {
      const double d = 100 * std::abs(mean_acc(cells, {n, w, b}) - mean_acc(cells, {n, 1, w * b}));
      if (std::isfinite(d)) worst = std::isfinite(worst) ? std::max(worst, d) : d;
    }
    if (std::isfinite(worst))
      said.push_back(display_name(n) + " over " + std::to_string(w) + " ranks is within " + fmt(worst, 3) +
                     " points of one process at the global batch");
  }
  return said;
}

}  // namespace

std::string reading(const DdpSweepConfig& cfg, const Cells& cells) {
  std::ostringstream md;
  const bool one = std::find(cfg.ranks.begin(), cfg.ranks.end(), 1) != cfg.ranks.end();
  double noise = 0;
  for (const auto& [k, v] : cells)
    if (v.size() > 1 && std::isfinite(std_of(v))) noise = std::max(noise, 100 * std_of(v));
  for (int w : cfg.ranks) {
    if (w == 1) continue;
    const std::vector<std::string> said = said_at(cfg, cells, w, one);
    if (said.empty()) continue;
    md << "At " << w << " ranks: ";
    for (size_t i = 0; i < said.size(); ++i) md << (i ? "; " : "") << said[i];
    md << ".\n\n";
  }
  if (!one) md << "No one-process runs (--ranks without 1): nothing to compare the ranks with. ";
  md << "Data-parallel training computes the same gradients as one process on the global batch for every norm "
        "that does not mix samples across ranks (none, LayerNorm, GroupNorm) and for SyncBatchNorm; BatchNorm "
        "with each rank's own statistics normalizes over the per-rank batch only. ";
  if (noise > 0) md << "The largest std over seeds of a cell is " << fmt(noise, 3) << " points. ";
  md << "\n";
  return md.str();
}

}  // namespace normlab::experiments::studies
