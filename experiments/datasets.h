// The data sets the experiments train on: Fashion-MNIST, any CSV file, or a synthetic set, split
// into train / validation / test and standardized with training-set statistics.
#pragma once
#include <cstdint>
#include <string>

#include "data/csv.h"
#include "experiments/trainer.h"

namespace normlab::experiments {

struct DataSpec {
  std::string name = "fashion-mnist";  // fashion-mnist | csv | spirals | moons | circles | blobs | xor
  std::string fashion_dir = "/usr/share/datasets/fashion-mnist";
  std::string csv_path, csv_test_path, label;  // csv: the file(s) and the label column
  data::CsvOptions csv_format;                 // csv: separator, comment character, header, skipped rows
  int64_t train_limit = 0;         // use only the first n training samples (0: all)
  int64_t test_limit = 0;          // use only the first n test samples (0: all)
  double validation_fraction = 0;  // of the training samples, held out for validation
  double test_fraction = 0.2;      // csv without a test file, and synthetic sets
  int64_t samples = 2000;          // synthetic: number of samples
  double noise = 0.1;              // synthetic: noise
  uint64_t seed = 0;               // synthetic generation and splits
};

// Loads and splits the data set; features standardized with the training set's mean and std.
// Errors (unknown name, missing file, bad CSV) are normlab::Error naming the file, line, column.
Splits load_data(const DataSpec& spec);
// One line for reports: "fashion-mnist (20000 train / 0 validation / 10000 test, 784 features)".
std::string describe(const DataSpec& spec, const Splits& s);

}  // namespace normlab::experiments
