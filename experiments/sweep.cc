// `normlab sweep`: final test accuracy against batch size (learning rate scaled linearly from a
// reference batch, BatchNorm evaluated with EMA, precise and test-batch statistics) or against the
// learning rate, for each norm, mean and std over seeds.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/output.h"
#include "experiments/plot.h"
#include "experiments/progress.h"
#include "experiments/stats.h"
#include "experiments/study.h"

namespace normlab::experiments {

namespace {

// The final accuracy of a run is the median over its last kFinalEpochs epochs (fewer if it ran fewer);
// only those epochs are evaluated.
constexpr int64_t kFinalEpochs = 3;

double final_of(const RunResult& r, double EpochRecord::*field) {
  if (r.diverged || r.epochs.empty()) return NAN;
  std::vector<double> v;
  const size_t n = r.epochs.size(), k = kFinalEpochs;
  for (size_t i = n >= k ? n - k : 0; i < n; ++i) v.push_back(r.epochs[i].*field);
  return median_of(v);
}

std::string pm(double m, double s) {
  if (!std::isfinite(m)) return "diverged";
  return fmt(100 * m, 4) + " ± " + fmt(100 * s, 2);
}

}  // namespace

Report run_sweep(const SweepConfig& cfg, const Splits& data, const StudyContext& ctx) {
  const bool by_batch = cfg.over == "batch";
  if (!by_batch && cfg.over != "lr") throw Error("sweep: --over must be 'batch' or 'lr', got '" + cfg.over + "'");
  if (cfg.norms.empty() || cfg.seeds.empty()) throw Error("sweep: needs at least one norm and one seed");
  if (by_batch && cfg.batch_sizes.empty()) throw Error("sweep: needs at least one batch size");
  if (!by_batch && cfg.lrs.empty()) throw Error("sweep: needs at least one learning rate");
  if (cfg.reference_batch <= 0) throw Error("sweep: the reference batch must be positive");

  // Every configuration, validated before anything trains.
  std::vector<TrainConfig> configs;
  const size_t points = by_batch ? cfg.batch_sizes.size() : cfg.lrs.size();
  for (const auto& norm : cfg.norms)
    for (size_t i = 0; i < points; ++i)
      for (uint64_t seed : cfg.seeds) {
        TrainConfig c = cfg.base;
        c.model.norm = norm;
        c.seed = seed;
        if (by_batch) {
          c.batch_size = cfg.batch_sizes[i];
          c.lr = cfg.base.lr * double(c.batch_size) / double(cfg.reference_batch);
        } else {
          c.lr = cfg.lrs[i];
        }
        c.bn_three_ways = by_batch && norm == "batch";
        c.eval_last = kFinalEpochs;
        validate(c, data);
        c.loss_every = std::max<int64_t>(1, steps_per_run(c, data) / 200);
        configs.push_back(c);
      }
  prepare_output_dir(ctx.out);
  int64_t total = 0;
  for (const auto& c : configs) total += steps_per_run(c, data);
  Progress progress(total, ctx.quiet);
  std::vector<RunResult> runs;
  int64_t base_done = 0;
  for (const TrainConfig& c : configs) {
    const std::string label = "sweep: norm " + c.model.norm + ", batch " + std::to_string(c.batch_size) + ", lr " +
                              fmt(c.lr, 4) + ", seed " + std::to_string(c.seed);
    RunResult r = train_run(c, data, [&](int64_t done, int64_t) { progress.update(base_done + done, label); });
    base_done += steps_per_run(c, data);
    r.model.reset();
    std::string msg = label + ": ";
    if (r.diverged) msg += "diverged at step " + std::to_string(r.diverged_step);
    else {
      msg += "test accuracy " + fmt(100 * final_of(r, &EpochRecord::test_acc), 4) + "%";
      if (c.bn_three_ways)
        msg += " (precise BN " + fmt(100 * final_of(r, &EpochRecord::test_acc_precise), 4) + "%, test-batch stats " +
               fmt(100 * final_of(r, &EpochRecord::test_acc_batch), 4) + "%)";
    }
    progress.line(msg + ", " + fmt(r.seconds, 3) + " s");
    runs.push_back(std::move(r));
  }
  progress.finish();
  const double wall = progress.elapsed_seconds();

  // ---- Tidy CSVs ----
  auto header = [](std::vector<std::string> extra) {
    auto h = settings_header();
    h.insert(h.end(), extra.begin(), extra.end());
    return h;
  };
  CsvTable runs_csv(header({"diverged", "diverged_step", "final_test_acc", "final_test_acc_precise",
                            "final_test_acc_batch", "final_test_loss"}));
  const bool has_val = data.validation.size() > 0;
  CsvTable epochs_csv(header(epoch_columns(has_val, true)));
  for (const RunResult& r : runs) {
    auto cells = settings_cells(r.config, ctx.dataset);
    auto extra = std::vector<std::string>{r.diverged ? "1" : "0", std::to_string(r.diverged_step),
                                          fmt(final_of(r, &EpochRecord::test_acc)),
                                          fmt(final_of(r, &EpochRecord::test_acc_precise)),
                                          fmt(final_of(r, &EpochRecord::test_acc_batch)),
                                          fmt(final_of(r, &EpochRecord::test_loss))};
    cells.insert(cells.end(), extra.begin(), extra.end());
    runs_csv.add_row(cells);
    for (const auto& e : r.epochs) {
      auto ec = settings_cells(r.config, ctx.dataset);
      for (auto& s : epoch_cells(e, has_val, true)) ec.push_back(std::move(s));
      epochs_csv.add_row(ec);
    }
  }

  // ---- Summary: one row per norm and sweep point ----
  struct Point {
    double x;
    std::vector<double> acc, precise, batch;
    int diverged = 0;
  };
  std::map<std::string, std::vector<Point>> pts;  // norm -> points in sweep order
  for (const auto& norm : cfg.norms)
    for (size_t i = 0; i < points; ++i) pts[norm].push_back(Point{by_batch ? double(cfg.batch_sizes[i]) : cfg.lrs[i]});
  for (const RunResult& r : runs) {
    auto& v = pts[r.config.model.norm];
    const double x = by_batch ? double(r.config.batch_size) : r.config.lr;
    for (Point& p : v)
      if (p.x == x) {
        p.acc.push_back(final_of(r, &EpochRecord::test_acc));
        p.precise.push_back(final_of(r, &EpochRecord::test_acc_precise));
        p.batch.push_back(final_of(r, &EpochRecord::test_acc_batch));
        if (r.diverged) ++p.diverged;
      }
  }
  const std::string xname = by_batch ? "batch_size" : "lr";
  CsvTable summary(std::vector<std::string>{"norm", xname, "runs", "diverged", "test_acc_mean", "test_acc_std",
                                            "precise_acc_mean", "precise_acc_std", "batch_stats_acc_mean",
                                            "batch_stats_acc_std"});
  for (const auto& norm : cfg.norms)
    for (const Point& p : pts[norm])
      summary.add_row({norm, fmt(p.x), std::to_string(cfg.seeds.size()), std::to_string(p.diverged), fmt(mean_of(p.acc)),
                       fmt(std_of(p.acc)), fmt(mean_of(p.precise)), fmt(std_of(p.precise)), fmt(mean_of(p.batch)),
                       fmt(std_of(p.batch))});
  runs_csv.write(ctx.out / "runs.csv");
  epochs_csv.write(ctx.out / "epochs.csv");
  summary.write(ctx.out / "summary.csv");

  // ---- Plots ----
  std::vector<std::string> plots;
  const bool has_bn = by_batch && pts.count("batch");
  if (gnuplot_available()) {
    PlotSpec acc{by_batch ? "Final test accuracy vs batch size (lr scaled linearly; error bars = std over seeds)"
                          : "Final test accuracy vs learning rate (error bars = std over seeds)",
                 by_batch ? "batch size" : "learning rate", "test accuracy (median of last 3 epochs)"};
    acc.log_x = by_batch ? 2 : 10;
    acc.error_bars = true;
    for (const auto& norm : cfg.norms) {
      Series s{norm == "batch" && by_batch ? "batch (running EMA stats)" : norm};
      for (const Point& p : pts[norm]) s.x.push_back(p.x), s.y.push_back(mean_of(p.acc)), s.spread.push_back(std_of(p.acc));
      acc.series.push_back(s);
    }
    if (has_bn) {
      Series pr{"batch (precise BN)"}, bs{"batch (test-batch stats)"};
      for (const Point& p : pts["batch"]) {
        pr.x.push_back(p.x), pr.y.push_back(mean_of(p.precise)), pr.spread.push_back(std_of(p.precise));
        bs.x.push_back(p.x), bs.y.push_back(mean_of(p.batch)), bs.spread.push_back(std_of(p.batch));
      }
      acc.series.push_back(pr);
      acc.series.push_back(bs);
    }
    const std::string acc_name = by_batch ? "accuracy_vs_batch" : "accuracy_vs_lr";
    render_plot(acc, ctx.out, acc_name);
    plots.push_back(acc_name);
    if (has_bn) {
      PlotSpec gap{"BatchNorm evaluation gap: accuracy minus accuracy with running (EMA) statistics", "batch size",
                   "accuracy difference (points)"};
      gap.log_x = 2;
      gap.error_bars = true;
      Series pr{"precise BN - EMA"}, bs{"test-batch stats - EMA"};
      for (const Point& p : pts["batch"]) {
        std::vector<double> dp, db;
        for (size_t i = 0; i < p.acc.size(); ++i) dp.push_back(100 * (p.precise[i] - p.acc[i])), db.push_back(100 * (p.batch[i] - p.acc[i]));
        pr.x.push_back(p.x), pr.y.push_back(mean_of(dp)), pr.spread.push_back(std_of(dp));
        bs.x.push_back(p.x), bs.y.push_back(mean_of(db)), bs.spread.push_back(std_of(db));
      }
      gap.series = {pr, bs};
      render_plot(gap, ctx.out, "bn_eval_gap");
      plots.push_back("bn_eval_gap");
    }
  }

  // ---- Report ----
  std::ostringstream md;
  md << "Model " << describe(cfg.base.model) << " (" << cfg.base.model.activation << "), data: " << ctx.dataset << ", "
     << cfg.base.epochs << " epochs per run, SGD momentum " << fmt(cfg.base.momentum) << ", "
     << (by_batch ? "lr = " + fmt(cfg.base.lr) + " x batch / " + std::to_string(cfg.reference_batch)
                  : "batch " + std::to_string(cfg.base.batch_size))
     << ", schedule " << cfg.base.schedule << " with " << cfg.base.warmup_steps << " warmup steps, " << cfg.seeds.size()
     << " seeds. Final accuracy = median test accuracy of the last 3 epochs; mean ± std over seeds, in %.\n\n";
  md << "| " << (by_batch ? "batch" : "lr");
  for (const auto& norm : cfg.norms) md << " | " << norm;
  if (has_bn) md << " | batch, precise BN | batch, test-batch stats";
  md << " |\n|---";
  for (size_t i = 0; i < cfg.norms.size() + (has_bn ? 2 : 0); ++i) md << "|---";
  md << "|\n";
  for (size_t i = 0; i < points; ++i) {
    md << "| " << fmt(by_batch ? double(cfg.batch_sizes[i]) : cfg.lrs[i]);
    for (const auto& norm : cfg.norms) md << " | " << pm(mean_of(pts[norm][i].acc), std_of(pts[norm][i].acc));
    if (has_bn) {
      const Point& p = pts["batch"][i];
      md << " | " << pm(mean_of(p.precise), std_of(p.precise)) << " | " << pm(mean_of(p.batch), std_of(p.batch));
    }
    md << " |\n";
  }
  md << "\n";
  for (const auto& p : plots) md << "![" << p << "](" << p << ".png)\n\n";
  md << "**Reading.** ";
  if (by_batch && points >= 2) {
    // Each norm against its own best batch size: the batch sizes where its mean accuracy falls
    // more than twice the larger seed std (and at least 0.5 points) below that best.
    for (const auto& norm : cfg.norms) {
      const auto& v = pts[norm];
      size_t best = 0;
      for (size_t i = 0; i < points; ++i)
        if (mean_of(v[i].acc) > mean_of(v[best].acc) || !std::isfinite(mean_of(v[best].acc))) best = i;
      md << norm << ": best " << fmt(100 * mean_of(v[best].acc), 4) << "% at batch " << cfg.batch_sizes[best];
      std::string worse;
      for (size_t i = 0; i < points; ++i) {
        const double gap = 100 * (mean_of(v[best].acc) - mean_of(v[i].acc));
        const double noise = 100 * std::max(std_of(v[best].acc), std_of(v[i].acc));
        if (!std::isfinite(gap))
          worse += (worse.empty() ? "" : ", ") + std::to_string(cfg.batch_sizes[i]) + " (diverged)";
        else if (gap > std::max(2 * noise, 0.5))
          worse += (worse.empty() ? "" : ", ") + std::to_string(cfg.batch_sizes[i]) + " (" + fmt(100 * mean_of(v[i].acc), 4) + "%)";
      }
      md << (worse.empty() ? "; every other batch size is within twice the seed std (or 0.5 points) of it. "
                           : "; more than twice the seed std below it at batch " + worse + ". ");
    }
    md << "With a fixed number of epochs, larger batches take fewer steps. ";
    if (has_bn) {
      size_t small = 0;
      for (size_t i = 0; i < points; ++i)
        if (cfg.batch_sizes[i] < cfg.batch_sizes[small]) small = i;
      const Point& b = pts["batch"][small];
      md << "At batch " << cfg.batch_sizes[small] << ", BatchNorm scores " << fmt(100 * mean_of(b.acc), 4)
         << "% with running statistics, " << fmt(100 * mean_of(b.precise), 4) << "% with precise statistics and "
         << fmt(100 * mean_of(b.batch), 4) << "% with the statistics of test batches. ";
    }
  } else if (!by_batch) {
    for (const auto& norm : cfg.norms) {
      double best = -1, best_lr = NAN;
      int div = 0;
      for (const Point& p : pts[norm]) {
        if (mean_of(p.acc) > best) best = mean_of(p.acc), best_lr = p.x;
        div += p.diverged;
      }
      md << norm << ": best " << fmt(100 * best, 4) << "% at lr " << fmt(best_lr) << ", " << div << " diverged run(s). ";
    }
  }
  md << "\n";
  Report rep{by_batch ? "Batch-size sensitivity" : "Learning-rate sensitivity", md.str()};
  write_file_atomic(ctx.out / "report.md", "# " + rep.title + "\n\nCommand: `" + ctx.command_line + "`\n\n" + rep.markdown);
  nlohmann::json base = to_json(cfg.base);
  base["eval_last"] = kFinalEpochs;
  nlohmann::json conf = {{"study", "sweep"}, {"over", cfg.over}, {"base", base},
                         {"batch_sizes", cfg.batch_sizes}, {"lrs", cfg.lrs}, {"reference_batch", cfg.reference_batch},
                         {"norms", cfg.norms}, {"seeds", cfg.seeds}};
  nlohmann::json man = manifest(ctx, conf, wall);
  // Where the time went, per run (not in the CSVs: they stay byte-identical between runs).
  nlohmann::json timing = nlohmann::json::array();
  for (const RunResult& r : runs)
    timing.push_back({{"norm", r.config.model.norm}, {"batch_size", r.config.batch_size}, {"lr", r.config.lr},
                      {"seed", r.config.seed}, {"steps", r.total_steps}, {"seconds", r.seconds}, {"cpu_seconds", r.cpu_seconds},
                      {"step_seconds", r.step_seconds}, {"data_seconds", r.data_seconds},
                      {"stats_seconds", r.stats_seconds}, {"eval_seconds", r.eval_seconds},
                      {"bn_eval_seconds", r.bn_eval_seconds}});
  man["run_timing"] = timing;
  write_file_atomic(ctx.out / "manifest.json", man.dump(2) + "\n");
  return rep;
}

}  // namespace normlab::experiments
