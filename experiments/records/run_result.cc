// What a run gives (run_result.h).
#include "experiments/records/run_result.h"

namespace normlab::experiments {

const EpochRecord& final_epoch(const RunResult& r) {
  if (r.best_epoch > 0)
    for (const EpochRecord& e : r.epochs)
      if (e.epoch == r.best_epoch) return e;
  return r.epochs.back();
}
}  // namespace normlab::experiments
