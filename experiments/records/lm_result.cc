// What a character language model's run gives (lm_result.h).
#include "experiments/records/lm_result.h"

namespace normlab::experiments {

const LmEvalPoint* LmRunResult::final_eval() const {
  return !diverged && !interrupted && !evals.empty() && evals.back().all ? &evals.back() : nullptr;
}

}  // namespace normlab::experiments
