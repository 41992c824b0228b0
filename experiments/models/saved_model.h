// What a model.safetensors written by `normlab train` says about itself, beyond its weights: the
// data it was trained on and how that data was prepared (so the model can be used outside the
// run: `normlab predict`, scripts/load_in_pytorch.py), and reading all of it back.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/split.h"
#include "experiments/models/model.h"
#include "experiments/registry/datasets.h"
#include "nn/sequential.h"

namespace normlab::experiments {

// Metadata entries for the data side (all strings; lists and numbers as JSON text):
//   "task": "classification" or "regression"; for regression "target": JSON {"name", "mean", "std"}
//   (the model predicts (y - mean) / std); "dataset": "fashion-mnist", "csv" or a synthetic set's name;
//   "data_recipe": JSON, what rebuilds the data set's test split for eval (a synthetic set's samples,
//   noise, seed and split fractions); "label": the CSV's label column; "class_names": JSON list, index order (the logits' order);
//   with --class-names, "class_labels": the label column's values of those classes;
//   with --categorical: "columns", the file's feature columns, and "categories", [[column,
//   [category, ...]], ...]: a categorical column's features "<column>=<category>" are 1 for the row's
//   category, else 0;
//   "feature_names": JSON list of the CSV's feature columns in the model's input order;
//   "csv_format": JSON {"separator", "comment" ("": none), "header", "skip_rows", "na_values",
//   "missing": "error" | "drop" | "mean"}: how the training file was read, for eval and predict;
//   "preprocessing": JSON {"input": how a raw sample becomes the feature vector x,
//                          "standardize": "x' = (x - mean) / std, std 0 read as 1",
//                          "mean": [...], "std": [...]} (the training split's, one per feature),
//                          and with --missing mean "fill": [...], what a missing value becomes.
std::map<std::string, std::string> data_metadata(const DataSpec& spec, const data::Splits& splits);

// A checkpoint read back: the model rebuilt from its metadata with the saved weights, and the data
// side of the metadata.
struct SavedModel {
  ModelSpec spec;
  std::shared_ptr<nn::Sequential> net;  // in eval mode
  std::string dataset, label;
  nlohmann::json data_recipe;  // what rebuilds the data set's test split (DatasetEntry::recipe; null: none)
  data::Task task = data::Task::Classification;  // regression: standardizer.y_mean/y_std scale the target
  std::vector<std::string> class_names, feature_names;
  std::vector<std::string> class_labels;  // the label column's values of the classes (with --class-names; else class_names)
  data::Standardizer standardizer;
  std::vector<float> fill;  // --missing mean: each feature's value for a missing cell (empty: none)
  // --categorical: the file's feature columns, and each categorical column's categories (empty: none)
  std::vector<std::string> source_columns;
  std::vector<std::pair<std::string, std::vector<std::string>>> categories;
  nlohmann::json csv_format;  // how the training CSV file was read (null: not a CSV file, or an older checkpoint)
  // Ctrl-C stopped its training: the weights at the interruption, after `steps` of `planned_steps`
  // (the metadata's "interrupted", "steps" and "planned_steps"; a string "" when not recorded).
  bool interrupted = false;
  std::string steps, planned_steps;
};

// `o` with the CSV format the checkpoint recorded (separator, comment character, header, skipped
// rows, NA strings, missing-value rule), except for what the flags typed for this command set
// (`typed`: --csv-sep, --csv-comment, --csv-no-header, --csv-skip-rows, --csv-na, --missing).
data::CsvOptions with_recorded_format(data::CsvOptions o, const SavedModel& m, const std::vector<std::string>& typed);

// Reads a model.safetensors that `normlab train` wrote. Errors name the file and what is missing
// (a checkpoint without the data metadata, e.g. one written before normlab recorded it, or by
// another program) or does not fit (weights of other shapes than the metadata's model).
SavedModel load_saved_model(const std::string& path);

// What eval and predict print (to stderr) before they use a model whose training was interrupted:
// "normlab: warning: <path> holds the weights at an interruption ..."; "" for a finished run.
std::string interrupted_warning(const SavedModel& m, const std::string& path);

// An empty data set with the model's training columns, classes and label column: what
// data::read_csv needs to read a file with the same columns for this model. Throws (naming
// `checkpoint` and `what` the file is for) unless the model was trained on a CSV file.
data::Dataset csv_columns_of(const SavedModel& m, const std::string& checkpoint, const std::string& what);

}  // namespace normlab::experiments
