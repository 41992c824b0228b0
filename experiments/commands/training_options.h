// The settings every training command's shared flags parse into (TrainingOptions), which of a CSV
// file's defaults apply (CsvFit), and the CNNs' evaluation batch: what the presets (presets.h) and
// the commands' flow (training.h) both read.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "experiments/config/train_config.h"
#include "experiments/registry/datasets.h"

namespace normlab::experiments::commands {

// Which of a CSV file's defaults apply (not given; train and compare without --quick): the batch
// size and the epochs are fitted to the training rows once they are read (presets.h: fit_to_rows).
struct CsvFit {
  bool batch = false, epochs = false, early_stopping = false, optimizer = false, validation = false;
  bool any() const { return batch || epochs || early_stopping || optimizer || validation; }
};

// The flags every training command has, parsed into the settings they name.
struct TrainingOptions {
  DataSpec data;
  TrainConfig train;
  std::vector<double> betas;  // --betas (empty: the optimizer's defaults)
  bool quick = false;
  bool resume = false;        // continue the results in --out (train: from its checkpoint)
  std::string out;
  bool quiet = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CsvFit csv_fit;             // a CSV file's defaults that apply (presets.h)
  std::string defaults_note;  // the sentences that say which defaults were chosen (the report's)
};

// The evaluation batch of convolutional models unless --eval-batch is given: a CNN's activations
// for 1000 images (100 MB per layer of the study's CNN) stream through memory, at 100 they stay
// in cache (the test set's evaluation 40% faster; accuracies the same, the summed test loss
// differs in the last digits).
inline constexpr int64_t kCnnEvalBatch = 100;

}  // namespace normlab::experiments::commands
