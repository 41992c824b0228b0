// What a character language model's run is: the model, the optimizer and schedule settings, the
// steps and the clipping (LmTrainConfig), and, in a study, the norm variant it stands for and the
// corpus it trains on (LmRunSpec).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data/text.h"
#include "experiments/config/model_spec.h"
#include "experiments/config/train_config.h"

namespace normlab::experiments {

// Windows of the fixed validation set that --eval-every evaluates (the first ones of the split);
// the final validation loss is over every window.
inline constexpr int64_t kLmEvalWindows = 256;

struct LmTrainConfig {
  CharModelSpec model;     // vocab_size from the corpus
  // The optimizer and schedule settings, the batch size, --eval-every and the seed (epochs unused).
  TrainConfig train;
  int64_t steps = 0;       // training steps
  double clip_grad_norm = 1.0;  // total gradient norm clipped to it (0: no clipping)
};

// One run of a study: the variant, and the settings that train it (its model's norm and position
// the variant's; batch, seed, steps and warmup in config.train) on the corpus all runs share.
struct LmRunSpec {
  std::string variant;
  LmTrainConfig config;
  std::shared_ptr<const data::TextCorpus> corpus;
  bool periodic = false;  // also evaluate every config.train.eval_every steps before the last on kLmEvalWindows windows
  bool sample = false;    // generate the report's sample (kLmSample) after training
};

// How a report's sample is generated: this prompt (or, when a character of it is not in the
// vocabulary, the training split's first character), this many characters, this temperature
// (no top-k), this generator seed.
struct LmSampleSettings {
  std::string prompt = "The ";
  int64_t length = 120;
  double temperature = 0.8;
  uint64_t seed = 0;
};
inline const LmSampleSettings kLmSample;

}  // namespace normlab::experiments
