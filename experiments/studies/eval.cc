// `normlab eval`: a saved model on labelled data (eval.h).
#include "experiments/studies/eval.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/loss.h"
#include "autograd/shape_ops.h"
#include "base/error.h"
#include "data/csv.h"
#include "data/fashion_mnist.h"
#include "experiments/models/evaluate.h"
#include "experiments/models/saved_model.h"
#include "experiments/registry/datasets.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

// The labelled data the model is evaluated on, standardized with the checkpoint's statistics.
data::Dataset eval_data(const EvalOptions& opt, const SavedModel& m) {
  data::Dataset raw;
  if (!opt.csv.empty()) {
    const data::Dataset train = csv_columns_of(m, opt.checkpoint, "eval --csv");
    data::CsvOptions o = with_recorded_format(opt.csv_format, m, opt.csv_flags_typed);
    o.label_column = m.label;
    o.task = m.task;
    raw = data::read_csv(opt.csv, o, train);
  } else if (const DatasetEntry& entry = dataset(m.dataset); entry.test_split) {
    // The data set's own test split: Fashion-MNIST's test images, a synthetic set regenerated
    // from the recipe its checkpoint recorded (the same arguments give the same bits).
    DataSpec spec;
    spec.name = m.dataset;
    spec.fashion_dir = opt.fashion_dir;
    if (entry.read_recipe) {
      if (m.data_recipe.is_null())
        throw Error(opt.checkpoint + " was trained on " + m.dataset + " but records no \"data_recipe\" to rebuild "
                    "its test split (a checkpoint of an older normlab): give labelled data with --csv FILE");
      try {
        entry.read_recipe(spec, m.data_recipe);
      } catch (const nlohmann::json::exception& e) {
        throw Error(opt.checkpoint + ": the checkpoint's metadata \"data_recipe\" is not valid: " + e.what());
      }
    }
    raw = entry.test_split(spec);
  } else {
    throw Error(opt.checkpoint + " was trained on " + m.dataset + ": give the labelled data to evaluate with --csv FILE" +
                (m.dataset == "csv" ? " (a file with the training columns and the label column \"" + m.label + "\")" : ""));
  }
  if (m.task == data::Task::Classification && raw.class_names != m.class_labels)
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

// A classifier's predictions on d: the true x predicted counts, and the summed cross-entropy.
struct Confusion {
  std::vector<std::vector<int64_t>> counts;
  double loss_sum = 0;
};

// Loss (mean cross-entropy), argmax predictions (the first maximum on ties) and the counts.
Confusion confusion_of(const SavedModel& m, const data::Dataset& d, int64_t eval_batch) {
  const int64_t n = d.size(), k = m.spec.outputs;
  Confusion cm{std::vector<std::vector<int64_t>>(k, std::vector<int64_t>(k, 0))};
  autograd::NoGradGuard no_grad;
  for (int64_t b0 = 0; b0 < n; b0 += eval_batch) {
    const int64_t b1 = std::min(n, b0 + eval_batch);
    const data::Dataset batch = d.slice(b0, b1);
    const autograd::Tensor logp = autograd::log_softmax((*m.net)(batch.x), 1);
    const float* lp = logp.data<float>();
    for (int64_t i = 0; i < b1 - b0; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < k; ++c)
        if (lp[i * k + c] > lp[i * k + best]) best = c;
      const int64_t y = batch.labels[i];
      cm.loss_sum -= lp[i * k + y];
      ++cm.counts[y][best];
    }
  }
  return cm;
}

}  // namespace

EvalPlan plan_eval(const EvalOptions& opt) {
  EvalPlan p{opt, load_saved_model(opt.checkpoint), {}};
  p.data = eval_data(opt, p.model);
  std::fputs(interrupted_warning(p.model, opt.checkpoint).c_str(), stderr);
  return p;
}

Report run_eval(const EvalOptions& opt, const StudyContext& ctx) { return run_eval(plan_eval(opt), ctx); }

Report run_eval(const EvalPlan& plan, const StudyContext& ctx) {
  const EvalOptions& opt = plan.options;
  const SavedModel& m = plan.model;
  const data::Dataset& d = plan.data;
  if (m.task == data::Task::Regression) return eval_regression(opt, ctx, m, d);
  const int64_t n = d.size(), k = m.spec.outputs;
  const Confusion cm = confusion_of(m, d, opt.eval_batch);
  const auto& confusion = cm.counts;
  const double loss_sum = cm.loss_sum;
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

Report run_lm_eval(const std::string& checkpoint, const LanguageModel& lm, const LmEvaluation& e, const StudyContext& ctx) {
  const int64_t block = lm.model->spec().block_size;
  const std::string skipped = e.skipped ? ", " + std::to_string(e.skipped) + " outside the vocabulary left out" : "";
  if (!ctx.quiet)
    std::printf("%s on the validation split of %s (%lld windows of %lld characters, %lld characters%s):\n",
                checkpoint.c_str(), e.source.c_str(), static_cast<long long>(e.windows), static_cast<long long>(block),
                static_cast<long long>(e.characters), skipped.c_str());
  const double bpc = bits(e.loss);
  std::printf("validation loss %s nats per character = %s bits per character\n", fmt(e.loss).c_str(), fmt(bpc).c_str());
  CsvTable metrics({"text", "windows", "characters", "skipped", "loss", "bits_per_char"});
  metrics.add_row({e.source, std::to_string(e.windows), std::to_string(e.characters), std::to_string(e.skipped),
                   fmt(e.loss), fmt(bpc)});
  metrics.write(ctx.out / "metrics.csv");
  std::ostringstream md;
  md << "Model `" << checkpoint << "` (" << lm.model->describe() << ") on the validation split of " << e.source
     << ": " << e.windows << " windows of " << block << " characters (" << e.characters << " characters" << skipped
     << "), loss **" << fmt(e.loss, 4) << "** nats per character = **" << fmt(bpc, 4) << "** bits per character.\n\n"
     << "Files: metrics.csv.\n";
  Report rep{"Evaluation", md.str()};
  nlohmann::json man = manifest(ctx, {{"study", "eval"}, {"checkpoint", checkpoint}, {"text", e.source}}, 0.0);
  man["loss"] = e.loss, man["bits_per_char"] = bpc, man["windows"] = e.windows, man["characters"] = e.characters;
  man["skipped"] = e.skipped;
  write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments::studies
