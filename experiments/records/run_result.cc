// What a run gives (run_result.h).
#include "experiments/records/run_result.h"

namespace normlab::experiments {

const EpochRecord& final_epoch(const RunResult& r) {
  if (r.best_epoch > 0)
    for (const EpochRecord& e : r.epochs)
      if (e.epoch == r.best_epoch) return e;
  return r.epochs.back();
}

const EvalRecord* final_eval(const RunResult& r) {
  return !r.diverged && !r.interrupted && !r.evals.empty() && r.evals.back().all ? &r.evals.back() : nullptr;
}

RunResult lm_result_of(const LmRunSpec& s) {
  RunResult r;
  r.config = s.config.train;
  r.variant = s.variant;
  r.block_size = s.config.model.block_size;
  r.total_steps = s.config.steps;
  return r;
}

}  // namespace normlab::experiments
