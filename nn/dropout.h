// Dropout: zeroes each element with probability p in training and scales the kept ones by
// 1/(1-p), so the expected output equals the input; in evaluation it passes the input through.
#pragma once
#include <cstdint>
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// Dropout, PyTorch's nn.Dropout: zeroes each element with probability p in training, scales the rest
/// by 1 / (1 - p).
class Dropout : public Module {
 public:
  /// p: the probability of zeroing an element, in [0, 1]; seed: the seed of this layer's own
  /// Generator, so a run's masks repeat exactly.
  explicit Dropout(double p = 0.5, uint64_t seed = 0);

  /// Training: dropout(x, p, generator()); evaluation (or p = 0): x itself.
  Tensor forward(const Tensor& x) override;
  /// "Dropout(p=0.5, inplace=False)".
  std::string repr() const override;

  /// The drop probability.
  double p() const { return p_; }
  /// The generator the masks are drawn from (re-seed it to replay masks).
  Generator& generator() { return gen_; }

 private:
  double p_;
  Generator gen_;
};

}  // namespace normlab::nn
