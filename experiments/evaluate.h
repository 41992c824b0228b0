// Evaluating a model: loss and accuracy over a data set, the one argmax accuracy count, and
// BatchNorm's two other evaluations (precise population statistics, test-batch statistics).
#pragma once
#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "data/split.h"
#include "nn/sequential.h"

namespace normlab::experiments {

struct EvalResult {
  double loss, accuracy;
};

// How many rows of logits (B, K) have their largest value (the first, on ties) at the label.
int64_t count_correct(const autograd::Tensor& logits, const std::vector<int64_t>& labels);

// Loss and accuracy of the model in eval mode (no graph) over a data set, in batches.
EvalResult evaluate(nn::Module& model, const data::Dataset& d, int64_t batch);

// Precise BN (Wu & Johnson 2021): test accuracy after the BatchNorm layers' population statistics
// are recomputed with the final weights, as the cumulative average of batch statistics over about
// `samples` training samples (batches of max(batch, 200), order from `seed`). The model's buffers
// and momenta are restored afterwards.
double precise_bn_accuracy(nn::Sequential& model, const data::Splits& s, int64_t batch, int64_t samples,
                           uint64_t seed, int64_t eval_batch);

// Test accuracy with each test batch normalized by its own statistics (batches of `batch`; a
// trailing batch of one sample is left out, as BatchNorm cannot normalize it). Buffers restored.
double batch_stats_accuracy(nn::Sequential& model, const data::Splits& s, int64_t batch);

}  // namespace normlab::experiments
