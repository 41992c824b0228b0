// The data set registry: Fashion-MNIST, any CSV file and the synthetic sets, one entry each, split
// into train / validation / test and standardized with training-set statistics. The command line
// (--dataset, the flags each set reads, its defaults), the reports, the checkpoints and `normlab
// eval` read it, so adding a data set is its loader plus one entry in datasets.cc, or one
// register_dataset() call from a program of your own.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/csv.h"
#include "experiments/config/train_config.h"

namespace normlab::experiments {

struct DataSpec {
  std::string name = "fashion-mnist";  // fashion-mnist | csv | spirals | moons | circles | blobs | xor
  std::string fashion_dir = "/usr/share/datasets/fashion-mnist";
  std::string csv_path, csv_test_path, label;  // csv: the file(s) and the label column
  data::CsvOptions csv_format;                 // csv: separator, comment character, header, skipped rows
  std::vector<std::string> class_names;        // csv: names for the classes, in class order (empty: the labels)
  int64_t train_limit = 0;         // use only the first n training samples (0: all)
  int64_t test_limit = 0;          // use only the first n test samples (0: all)
  double validation_fraction = 0;  // of the training samples, held out for validation
  bool validation_defaulted = false;  // the fraction is a default, not typed: it may give no sample
  double test_fraction = 0.2;      // csv without a test file, and synthetic sets
  int64_t samples = 2000;          // synthetic: number of samples
  double noise = 0.1;              // synthetic: noise
  uint64_t seed = 0;               // synthetic generation and splits
};

// One data set.
struct DatasetEntry {
  std::string name;     // as typed and recorded: "moons"
  std::string family;   // sets sharing flags say so in messages: "a synthetic data set" ("": none)
  // The flags only this data set (and others listing them) reads; given with another data set they
  // are a usage error, e.g. {"--samples", "--noise"}.
  std::vector<std::string> flags;
  bool reads_limits = false;  // applies --train-limit and --test-limit itself while reading
  bool own_test_set = false;  // comes with its test set: --test-fraction does not apply
  std::vector<int64_t> hidden;       // the MLP's hidden widths when --hidden is not given (empty: 64,64)
  std::optional<int64_t> warmup;     // warmup steps when --warmup is not given (none: 0)
  std::vector<int64_t> image_shape;  // one sample as C,H,W for --arch cnn without --image-shape (empty: none)
  std::string input_rule;            // how a raw sample becomes the feature vector (checkpoint metadata)
  // Training, validation and test splits as read, not standardized (limits applied when reads_limits).
  std::function<Splits(const DataSpec&)> load;
  // `normlab eval` without --csv: the test split again, from the spec the checkpoint's recipe gave
  // (and eval's --data-dir), not standardized. Empty: eval needs a labelled file.
  std::function<data::Dataset(const DataSpec&)> test_split;
  // What a checkpoint records to rebuild the test split with test_split (null: nothing), and reading it back.
  std::function<nlohmann::json(const DataSpec&)> recipe;
  std::function<void(DataSpec&, const nlohmann::json&)> read_recipe;
};

// Every registered data set: fashion-mnist, csv, spirals, moons, circles, blobs, xor, then any added.
const std::vector<DatasetEntry>& datasets();
// The entry called `name`; throws normlab::Error "unknown dataset 'x' (expected one of: ...)".
const DatasetEntry& dataset(const std::string& name);
void register_dataset(DatasetEntry entry);

// Loads and splits the data set; features standardized with the training set's mean and std.
// Errors (unknown name, missing file, bad CSV) are normlab::Error naming the file, line, column.
Splits load_data(const DataSpec& spec);
// One line for reports: "fashion-mnist (20000 train / 0 validation / 10000 test, 784 features)".
std::string describe(const DataSpec& spec, const Splits& s);

}  // namespace normlab::experiments
