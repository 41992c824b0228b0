// Evaluating a model: the loss and score of a batch (cross-entropy and accuracy for class labels,
// mean squared error and R^2 for regression targets), over a data set, and BatchNorm's two other
// evaluations (precise population statistics, test-batch statistics).
#pragma once
#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/split.h"
#include "nn/sequential.h"

namespace normlab::experiments {

struct EvalResult {
  double loss, score;  // score: accuracy (classification) or R^2 (regression)
};

// How many rows of logits (B, K) have their largest value (the first, on ties) at the label.
int64_t count_correct(const autograd::Tensor& logits, const std::vector<int64_t>& labels);

// The loss of a batch: cross-entropy of logits (B, K) at the class labels, or for regression the
// mean squared error of outputs (B, 1) against the (standardized) targets y (B, 1).
autograd::Tensor loss_of(const autograd::Tensor& out, const data::Batch& b);

// A score summed over batches: accuracy = correct / seen for class labels; for regression
// R^2 = 1 - SSE / SST, SST = sum (y - mean y)^2 over the scored targets (1: as good as predicting
// their mean; can be negative). Sums in float64, batches in order.
struct ScoreMeter {
  int64_t correct = 0, seen = 0;
  bool regression = false;                // the batches have targets y, not labels
  double sse = 0, sum_y = 0, sum_y2 = 0;  // regression
  void add(const autograd::Tensor& out, const data::Batch& b);
  // NaN when nothing was scored (or all targets were equal).
  double value() const;
};

// Loss and score of the model in eval mode (no graph) over a data set, in batches.
EvalResult evaluate(nn::Module& model, const data::Dataset& d, int64_t batch);

// Precise BN (Wu & Johnson 2021): the test score after the BatchNorm layers' population statistics
// are recomputed with the final weights, as the cumulative average of batch statistics over about
// `samples` training samples (batches of max(batch, 200), order from `seed`); a recurrent BatchNorm
// cell (nn::BatchNormLSTM) the same for every step's slot. The model's buffers and momenta are
// restored afterwards.
double precise_bn_accuracy(nn::Sequential& model, const data::Splits& s, int64_t batch, int64_t samples,
                           uint64_t seed, int64_t eval_batch);

// The test score with each test batch normalized by its own statistics (batches of `batch`; a
// trailing batch of one sample is left out, as BatchNorm cannot normalize it; a noisy BatchNorm adds
// no noise). Buffers restored.
double batch_stats_accuracy(nn::Sequential& model, const data::Splits& s, int64_t batch);

}  // namespace normlab::experiments
