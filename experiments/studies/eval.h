// `normlab eval`: a saved model's loss, accuracy, per-class accuracy and confusion matrix on a
// labelled data set, with the preprocessing its checkpoint records.
#pragma once
#include <cstdint>
#include <string>

#include "data/csv.h"
#include "experiments/models/language_model.h"
#include "experiments/models/saved_model.h"
#include "experiments/studies/study.h"

namespace normlab::experiments::studies {

struct EvalOptions {
  std::string checkpoint;  // model.safetensors of `normlab train`
  std::string csv;         // a labelled CSV file (models trained on a CSV file); empty: the test set
  std::string fashion_dir = "/usr/share/datasets/fashion-mnist";  // Fashion-MNIST models: its test set
  int64_t eval_batch = 1000;
  data::CsvOptions csv_format;  // how --csv is laid out (separator, comments, header, skipped rows)
  // The format flags typed (kRecordedCsvFlags); the others take the checkpoint's recorded format.
  std::vector<std::string> csv_flags_typed;
};

// What an evaluation reads, read once: the options, the checkpoint's model and the labelled data
// (standardized with the checkpoint's statistics).
struct EvalPlan {
  EvalOptions options;
  SavedModel model;
  data::Dataset data;
};
// Reads the checkpoint and the data; errors (a damaged checkpoint, a file without the model's
// columns) are normlab::Error naming the file.
EvalPlan plan_eval(const EvalOptions& opt);
Report run_eval(const EvalPlan& plan, const StudyContext& ctx);

// Evaluates the checkpoint's model on the CSV file (with the training columns and label) or, for a
// Fashion-MNIST model without --csv, on the 10,000 test images (a synthetic set's: its test split,
// regenerated from the checkpoint's recipe). Writes into ctx.out: metrics.csv
// (samples, loss, accuracy), per_class.csv (class, samples, correct, accuracy), confusion.csv
// (true class x predicted class counts), confusion.png/.svg, report.md and manifest.json.
Report run_eval(const EvalOptions& opt, const StudyContext& ctx);

// A character language model's evaluation e (evaluate_language_model) of `checkpoint`, written into
// ctx.out as a classifier's is: metrics.csv (text, windows, characters, skipped, loss in nats and
// bits per character), report.md and manifest.json; the two lines eval prints.
Report run_lm_eval(const std::string& checkpoint, const LanguageModel& lm, const LmEvaluation& e, const StudyContext& ctx);

}  // namespace normlab::experiments::studies
