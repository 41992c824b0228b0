// `normlab predict`: a saved model's class probabilities and predicted class for each row of a CSV
// file, with the preprocessing its checkpoint records.
#pragma once
#include <string>

#include "data/csv.h"
#include "experiments/models/saved_model.h"

namespace normlab::experiments::studies {

// Reads the checkpoint (saved_model.h) and the CSV file (its feature columns by name, in any
// order, laid out as `format` says; the label column optional: with it, the accuracy is printed),
// standardizes the features
// as in training, and writes `out` atomically: one row per data row with its file line, the
// predicted class name, the label when the file has one, and p_<class> for every class. Returns
// the exit status; errors (a checkpoint of a model not trained on a CSV file, missing columns,
// bad cells) are normlab::Error naming the file, line and column.
int run_predict(const std::string& checkpoint, const std::string& csv, const data::CsvOptions& format,
                const std::string& out, bool quiet);

// The same in two steps: what a prediction reads (the checkpoint's model, the CSV rows with the
// model's columns), read once; then the predictions written to `out`.
struct PredictPlan {
  SavedModel model;
  data::Dataset rows;
};
// format: the flags typed (their names in `typed`); the others take the checkpoint's recorded format.
PredictPlan plan_predict(const std::string& checkpoint, const std::string& csv, const data::CsvOptions& format,
                         const std::vector<std::string>& typed = {});
int run_predict(const PredictPlan& plan, const std::string& out, bool quiet);

}  // namespace normlab::experiments::studies
