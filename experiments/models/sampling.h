// Sampling the next token from a language model's logits, as `normlab generate` does: temperature,
// top-k, and a seeded draw (the same seed gives the same text).
#pragma once
#include <cstdint>
#include <vector>

#include "autograd/generator.h"

namespace normlab::experiments {

struct SamplingOptions {
  double temperature = 1.0;  // logits are divided by it; 0 picks the most likely token (greedy)
  int64_t top_k = 0;         // keep the k most likely tokens only (0: all of them)
};

// Throws normlab::Error naming --temperature or --top-k for a negative or non-finite temperature, or a
// top-k outside [0, vocab].
void check_sampling(const SamplingOptions& o, int64_t vocab);

// One token id from logits (vocab values): with temperature T > 0 and top-k k, the probability of
// token i is p_i = exp(z_i / T) / sum_j exp(z_j / T) over the k largest logits (the others 0; ties at
// the k-th value are all kept, as PyTorch's `logits < topk.values[-1]` masking does), drawn by
// inverting the cumulative sum at one uniform number from gen. T = 0: the first largest logit.
// NaN logits are an error (a diverged model).
int64_t sample_token(const float* logits, int64_t vocab, const SamplingOptions& o, autograd::Generator& gen);

}  // namespace normlab::experiments
