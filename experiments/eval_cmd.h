// `normlab eval`: a saved model's loss, accuracy, per-class accuracy and confusion matrix on a
// labelled data set, with the preprocessing its checkpoint records.
#pragma once
#include <cstdint>
#include <string>

#include "data/csv.h"
#include "experiments/study.h"

namespace normlab::experiments {

struct EvalOptions {
  std::string checkpoint;  // model.safetensors of `normlab train`
  std::string csv;         // a labelled CSV file (models trained on a CSV file); empty: the test set
  std::string fashion_dir = "/usr/share/datasets/fashion-mnist";  // Fashion-MNIST models: its test set
  int64_t eval_batch = 1000;
  data::CsvOptions csv_format;  // how --csv is laid out (separator, comments, header, skipped rows)
};

// Evaluates the checkpoint's model on the CSV file (with the training columns and label) or, for a
// Fashion-MNIST model without --csv, on the 10,000 test images. Writes into ctx.out: metrics.csv
// (samples, loss, accuracy), per_class.csv (class, samples, correct, accuracy), confusion.csv
// (true class x predicted class counts), confusion.png/.svg, report.md and manifest.json.
Report run_eval(const EvalOptions& opt, const StudyContext& ctx);

}  // namespace normlab::experiments
