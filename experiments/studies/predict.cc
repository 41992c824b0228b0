// `normlab predict` (predict.h).
#include "experiments/studies/predict.h"

#include <cstdio>
#include <filesystem>

#include "autograd/engine.h"
#include "autograd/loss.h"
#include "base/error.h"
#include "data/csv.h"
#include "experiments/models/saved_model.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

namespace {

// Writes the predictions to `out` (its folder created if missing) and, unless quiet, the line
// "normlab: N predictions in OUT" followed by `score` (how they compare with the file's labels).
void write_predictions(const CsvTable& table, const std::string& out, bool quiet, int64_t n, const std::string& score) {
  const std::filesystem::path path(out);
  if (path.has_parent_path()) prepare_output_dir(path.parent_path());
  table.write(path);
  if (!quiet) std::printf("normlab: %lld predictions in %s%s\n", static_cast<long long>(n), out.c_str(), score.c_str());
}

// A regression model's predictions y = y' std + mean per row, with the file's targets if it has
// them (and then RMSE and R^2 printed).
int predict_values(const SavedModel& m, const data::Dataset& rows, const autograd::Tensor& x, const std::string& out,
                   bool quiet, bool labelled) {
  const autograd::Tensor pred = (*m.net)(x);
  const float* p = pred.data<float>();
  const int64_t n = rows.size();
  std::vector<std::string> header{"line", "predicted"};
  if (labelled) header.push_back(m.label);
  CsvTable table(header);
  double sse = 0, sum = 0, ss = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double y_hat = double(p[i]) * m.standardizer.y_std + m.standardizer.y_mean;
    std::vector<std::string> row{std::to_string(rows.lines[i]), fmt(y_hat, 7)};
    if (labelled) {
      const double y = rows.y.data<float>()[i];
      row.push_back(fmt(y, 7));
      sse += (y_hat - y) * (y_hat - y), sum += y, ss += y * y;
    }
    table.add_row(row);
  }
  const double sst = ss - sum * sum / static_cast<double>(n);
  write_predictions(table, out, quiet, n,
                    labelled ? " (on the file's targets: RMSE " + fmt(std::sqrt(sse / static_cast<double>(n)), 4) +
                                   ", R² " + (sst > 0 ? fmt(1 - sse / sst, 4) : std::string("n/a")) + ")"
                             : "");
  return 0;
}

}  // namespace

PredictPlan plan_predict(const std::string& checkpoint, const std::string& csv, const data::CsvOptions& format,
                         const std::vector<std::string>& typed) {
  PredictPlan p{load_saved_model(checkpoint), {}};
  const data::Dataset train = csv_columns_of(p.model, checkpoint, "predict");
  data::CsvOptions opt = with_recorded_format(format, p.model, typed);
  opt.label_column = p.model.label;
  opt.task = p.model.task;
  p.rows = data::read_csv_features(csv, opt, train);
  std::fputs(interrupted_warning(p.model, checkpoint).c_str(), stderr);
  return p;
}

int run_predict(const std::string& checkpoint, const std::string& csv, const data::CsvOptions& format,
                const std::string& out, bool quiet) {
  return run_predict(plan_predict(checkpoint, csv, format), out, quiet);
}

int run_predict(const PredictPlan& plan, const std::string& out, bool quiet) {
  const SavedModel& m = plan.model;
  const data::Dataset& rows = plan.rows;
  const bool regression = m.task == data::Task::Regression;
  const bool labelled = regression ? rows.y.defined() : !rows.labels.empty();

  // x' = (x - mean) / std per feature (std 0 read as 1), as training's data::Standardizer.
  const int64_t n = rows.size(), d = rows.features(), k = m.spec.outputs;
  autograd::Tensor x = autograd::empty({n, d});
  const float* src = rows.x.data<float>();
  float* dst = x.data<float>();
  for (int64_t j = 0; j < d; ++j) {
    const double mean = m.standardizer.mean[j], inv = m.standardizer.std[j] > 0 ? 1.0 / m.standardizer.std[j] : 1.0;
    for (int64_t i = 0; i < n; ++i) dst[i * d + j] = static_cast<float>((src[i * d + j] - mean) * inv);
  }
  autograd::NoGradGuard no_grad;
  if (regression) return predict_values(m, rows, x, out, quiet, labelled);
  const autograd::Tensor logp = autograd::log_softmax((*m.net)(x), 1);
  const float* lp = logp.data<float>();

  std::vector<std::string> header{"line", "predicted"};
  if (labelled) header.push_back("label");
  for (const auto& c : m.class_names) header.push_back("p_" + c);
  CsvTable table(header);
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < k; ++c)
      if (lp[i * k + c] > lp[i * k + best]) best = c;
    std::vector<std::string> row{std::to_string(rows.lines[i]), m.class_names[best]};
    if (labelled) row.push_back(m.class_names[rows.labels[i]]), correct += rows.labels[i] == best;
    for (int64_t c = 0; c < k; ++c) row.push_back(fmt(std::exp(static_cast<double>(lp[i * k + c])), 7));
    table.add_row(row);
  }
  write_predictions(table, out, quiet, n,
                    labelled ? " (accuracy on the file's labels: " + fmt(100.0 * correct / n, 4) + "%, " +
                                   std::to_string(correct) + " of " + std::to_string(n) + ")"
                             : "");
  return 0;
}

}  // namespace normlab::experiments::studies
