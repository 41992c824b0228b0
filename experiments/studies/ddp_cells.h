// The cells of the local-BatchNorm vs SyncBatchNorm experiment (sweep --distributed): each norm's
// final test accuracies over the seeds at W ranks and per-rank batch b, and the reading computed
// from them for the report.
#pragma once
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "experiments/studies/study.h"

namespace normlab::experiments::studies {

// One cell of the experiment: a norm over `ranks` processes at `per_rank` samples each (ranks 1:
// one process at batch per_rank).
struct Cell {
  std::string norm;
  int ranks;
  int64_t per_rank;
  bool operator<(const Cell& o) const {
    return std::tie(norm, ranks, per_rank) < std::tie(o.norm, o.ranks, o.per_rank);
  }
};
using Cells = std::map<Cell, std::vector<double>>;  // final test accuracy of each seed (NaN: diverged)

// The ranks a run of the experiment trained over (run_config records it).
int ranks_of(const TrainConfig& c);
// The mean accuracy of a cell; NaN when it has no runs.
double mean_acc(const Cells& cells, const Cell& k);
// The norms shown beside BatchNorm and SyncBatchNorm (LayerNorm, GroupNorm, ...), in cfg order.
std::vector<std::string> other_norms(const DdpSweepConfig& cfg);
// Whether the experiment runs norm n.
bool has(const DdpSweepConfig& cfg, const std::string& n);
// The report's reading: at each W > 1, which batch local BatchNorm and SyncBatchNorm follow (when
// the two references are further apart than the seeds' spread), and how close the other norms
// over W ranks are to one process at the global batch.
std::string reading(const DdpSweepConfig& cfg, const Cells& cells);

}  // namespace normlab::experiments::studies
