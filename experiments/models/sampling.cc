// Temperature and top-k sampling of one token (sampling.h).
#include "experiments/models/sampling.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"

namespace normlab::experiments {

void check_sampling(const SamplingOptions& o, int64_t vocab) {
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    throw Error("--temperature must be a finite number of at least 0 (0: always the most likely character), got " +
                std::to_string(o.temperature));
  if (o.top_k < 0)
    throw Error("--top-k must be 0 (all characters) or a number of characters, got " + std::to_string(o.top_k));
  if (o.top_k > vocab)
    throw Error("--top-k must be from 0 (all characters) to the vocabulary size " + std::to_string(vocab) + ", got " +
                std::to_string(o.top_k));
}

int64_t sample_token(const float* logits, int64_t vocab, const SamplingOptions& o, autograd::Generator& gen) {
  check_sampling(o, vocab);
  int64_t best = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (std::isnan(logits[i])) throw Error("the model's logits hold NaN at token " + std::to_string(i) + " (a diverged model?)");
    if (logits[i] > logits[best]) best = i;
  }
  if (o.temperature == 0 || o.top_k == 1) return best;
  // The k-th largest logit: tokens below it are dropped.
  float cut = -INFINITY;
  if (o.top_k > 0) {
    std::vector<float> sorted(logits, logits + vocab);
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<float>());
    cut = sorted[o.top_k - 1];
  }
  // p_i proportional to exp((z_i - z_max) / T), in double, over the kept tokens.
  std::vector<double> p(vocab, 0.0);
  double total = 0;
  for (int64_t i = 0; i < vocab; ++i)
    if (logits[i] >= cut) total += p[i] = std::exp((double(logits[i]) - double(logits[best])) / o.temperature);
  const double u = gen.uniform() * total;
  double acc = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    acc += p[i];
    if (p[i] > 0 && u < acc) return i;
  }
  return best;  // u within rounding of the total: the last kept token would do; the best is kept
}

}  // namespace normlab::experiments
