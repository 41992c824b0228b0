// What a character language model's run gives: the loss, lr and gradient norm of every step
// (LmStep), its evaluations on the validation split (LmEvalPoint), its sample and how it ended
// (LmRunResult).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace normlab::experiments {

// One training step's record.
struct LmStep {
  int64_t step;  // 1-based: the loss of the step's batch before its update
  double loss, lr, grad_norm;
};

// One evaluation of a run on the validation split: the first `windows` non-overlapping windows
// (every one when `all`), in batches of the run's training batch size.
struct LmEvalPoint {
  int64_t step = 0;
  int64_t windows = 0;
  bool all = false;
  double val_loss = NAN;             // nats per character, eval mode (BatchNorm: running statistics)
  double val_loss_train_mode = NAN;  // BatchNorm: train mode (each batch's own statistics); else NaN
};

struct LmRunResult {
  std::string variant;
  uint64_t seed = 0;
  int64_t batch_size = 0, block_size = 0, steps_planned = 0, parameters = 0;
  std::vector<LmStep> steps;
  std::vector<LmEvalPoint> evals;  // the periodic ones, then the final one over every window
  bool diverged = false, interrupted = false;
  double seconds = 0;
  std::string sample_prompt, sample;  // UTF-8; empty without a sample
  // The final evaluation over every window (nullptr: diverged, interrupted or no validation split).
  const LmEvalPoint* final_eval() const;
  // Training tokens seen: steps done x batch x block.
  int64_t tokens() const { return static_cast<int64_t>(steps.size()) * batch_size * block_size; }
};

}  // namespace normlab::experiments
