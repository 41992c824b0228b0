// `normlab eval` (eval_cmd.h).
#include "experiments/eval_cmd.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "base/error.h"
#include "autograd/loss.h"
#include "autograd/shape_ops.h"
#include "data/csv.h"
#include "data/fashion_mnist.h"
#include "experiments/output.h"
#include "experiments/plot.h"
#include "experiments/evaluate.h"
#include "experiments/report.h"
#include "experiments/saved_model.h"

namespace normlab::experiments {

namespace {

// The labelled data the model is evaluated on, standardized with the checkpoint's statistics.
data::Dataset eval_data(const EvalOptions& opt, const SavedModel& m) {
  data::Dataset raw;
  if (!opt.csv.empty()) {
    const data::Dataset train = csv_columns_of(m, opt.checkpoint, "eval --csv");
    data::CsvOptions o = opt.csv_format;
    o.label_column = m.label;
    o.task = m.task == "regression" ? data::Task::Regression : data::Task::Classification;
    raw = data::read_csv(opt.csv, o, train);
  } else if (m.dataset == "fashion-mnist") {
    raw = data::load_fashion_mnist(data::FashionMnistSplit::Test, opt.fashion_dir);
  } else {
    throw Error(opt.checkpoint + " was trained on " + m.dataset + ": give the labelled data to evaluate with --csv FILE" +
                (m.dataset == "csv" ? " (a file with the training columns and the label column \"" + m.label + "\")"
                                    : " (synthetic sets are not saved; evaluate a model trained on a CSV file or Fashion-MNIST)"));
  }
  if (m.task == "classification" && raw.class_names != m.class_names)
    throw Error(raw.name + ": its classes differ from the model's (" + std::to_string(raw.class_names.size()) + " vs " +
                std::to_string(m.class_names.size()) + ")");
  return m.standardizer.apply(raw);
}

// A regression model: MSE of the standardized target, RMSE in the target's units, R^2.
Report eval_regression(const EvalOptions& opt, const StudyContext& ctx, const SavedModel& m, const data::Dataset& d) {
  const EvalResult r = evaluate(*m.net, d, opt.eval_batch);
  const int64_t n = d.size();
  const double rmse = std::sqrt(r.loss) * m.standardizer.y_std;
  CsvTable metrics({"samples", "loss", "rmse", "r2"});
  metrics.add_row({std::to_string(n), fmt(r.loss), fmt(rmse), fmt(r.score)});
  metrics.write(ctx.out / "metrics.csv");
  std::ostringstream md;
  md << "Model `" << opt.checkpoint << "` (" << describe(m.spec) << ", norm " << m.spec.norm << ") on " << d.name
     << ": " << n << " samples, R² **" << fmt(r.score, 4) << "**, RMSE " << fmt(rmse, 4) << " (in the units of "
     << m.label << "), loss " << fmt(r.loss, 4) << " (the mean squared error of the target standardized with the "
     << "training split's mean " << fmt(m.standardizer.y_mean, 4) << " and std " << fmt(m.standardizer.y_std, 4)
     << ").\n\nFiles: metrics.csv.\n";
  if (!ctx.quiet)
    std::printf("eval: %lld samples, R² %s, RMSE %s, loss %s\n", static_cast<long long>(n), fmt(r.score, 4).c_str(),
                fmt(rmse, 4).c_str(), fmt(r.loss, 4).c_str());
  Report rep{"Evaluation", md.str()};
  nlohmann::json man = manifest(ctx, {{"study", "eval"}, {"checkpoint", opt.checkpoint}, {"csv", opt.csv}}, 0.0);
  man["r2"] = r.score, man["rmse"] = rmse, man["loss"] = r.loss, man["samples"] = n;
  write_report(ctx, rep, man);
  return rep;
}

}  // namespace

Report run_eval(const EvalOptions& opt, const StudyContext& ctx) {
  const SavedModel m = load_saved_model(opt.checkpoint);
  const data::Dataset d = eval_data(opt, m);
  if (m.task == "regression") return eval_regression(opt, ctx, m, d);
  const int64_t n = d.size(), k = m.spec.outputs;
  // Loss (mean cross-entropy), argmax predictions (the first maximum on ties) and the counts.
  std::vector<std::vector<int64_t>> confusion(k, std::vector<int64_t>(k, 0));
  double loss_sum = 0;
  {
    autograd::NoGradGuard no_grad;
    for (int64_t b0 = 0; b0 < n; b0 += opt.eval_batch) {
      const int64_t b1 = std::min(n, b0 + opt.eval_batch);
      const data::Dataset batch = d.slice(b0, b1);
      const autograd::Tensor logp = autograd::log_softmax((*m.net)(batch.x), 1);
      const float* lp = logp.data<float>();
      for (int64_t i = 0; i < b1 - b0; ++i) {
        int64_t best = 0;
        for (int64_t c = 1; c < k; ++c)
          if (lp[i * k + c] > lp[i * k + best]) best = c;
        const int64_t y = batch.labels[i];
        loss_sum -= lp[i * k + y];
        ++confusion[y][best];
      }
    }
  }
  int64_t correct = 0;
  for (int64_t c = 0; c < k; ++c) correct += confusion[c][c];
  const double accuracy = static_cast<double>(correct) / static_cast<double>(n), loss = loss_sum / static_cast<double>(n);

  CsvTable metrics({"samples", "loss", "accuracy"});
  metrics.add_row({std::to_string(n), fmt(loss), fmt(accuracy)});
  metrics.write(ctx.out / "metrics.csv");
  CsvTable per_class({"class", "samples", "correct", "accuracy"});
  std::vector<std::string> header{"true_class"};
  for (const auto& c : m.class_names) header.push_back("predicted_" + c);
  CsvTable conf(header);
  std::ostringstream md;
  md << "Model `" << opt.checkpoint << "` (" << describe(m.spec) << ", norm " << m.spec.norm << ") on " << d.name
     << ": " << n << " samples, accuracy **" << pct(accuracy) << "**, loss " << fmt(loss, 4) << ".\n\n";
  md << "| class | samples | accuracy (%) |\n|---|---|---|\n";
  for (int64_t c = 0; c < k; ++c) {
    int64_t total = 0;
    for (int64_t v : confusion[c]) total += v;
    const double acc = total > 0 ? static_cast<double>(confusion[c][c]) / static_cast<double>(total) : NAN;
    per_class.add_row({m.class_names[c], std::to_string(total), std::to_string(confusion[c][c]), fmt(acc)});
    std::vector<std::string> row{m.class_names[c]};
    for (int64_t v : confusion[c]) row.push_back(std::to_string(v));
    conf.add_row(row);
    md << "| " << m.class_names[c] << " | " << total << " | " << (total > 0 ? fmt(100 * acc, 4) : "-") << " |\n";
  }
  per_class.write(ctx.out / "per_class.csv");
  conf.write(ctx.out / "confusion.csv");
  md << "\n";
  if (gnuplot_available()) {
    render_confusion("Confusion matrix (" + pct(accuracy) + " accurate)", m.class_names, confusion, ctx.out, "confusion");
    md << "![confusion](confusion.png)\n\n";
  }
  md << "Files: metrics.csv, per_class.csv, confusion.csv (rows: true class, columns: predicted class).\n";
  if (!ctx.quiet) std::printf("eval: %lld samples, accuracy %s, loss %s\n", static_cast<long long>(n), pct(accuracy).c_str(), fmt(loss, 4).c_str());
  Report rep{"Evaluation", md.str()};
  nlohmann::json man = manifest(ctx, {{"study", "eval"}, {"checkpoint", opt.checkpoint}, {"csv", opt.csv}}, 0.0);
  man["accuracy"] = accuracy, man["loss"] = loss, man["samples"] = n;
  write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments
