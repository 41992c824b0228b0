// `normlab sweep`: final test accuracy against batch size (learning rate scaled linearly from a
// reference batch, BatchNorm evaluated with EMA, precise and test-batch statistics) or against the
// learning rate, for each norm: the mean over seeds with its 95% interval, differences tested.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/models/archs.h"
#include "experiments/records/records.h"
#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/report/tidy.h"
#include "experiments/run/runs.h"
#include "experiments/studies/study.h"
#include "experiments/studies/study_runs.h"
#include "experiments/studies/sweep_parts.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

// A batch sweep's warmup at batch b: base.warmup_steps at the reference batch, scaled so that it
// covers the same number of samples (the same fraction of the run) at every batch size:
// round(warmup x reference / b), at least 1 step when there is a warmup.
int64_t scaled_warmup(const SweepConfig& cfg, int64_t b) {
  if (cfg.base.warmup_steps <= 0) return 0;
  return std::max<int64_t>(1, std::llround(double(cfg.base.warmup_steps) * double(cfg.reference_batch) / double(b)));
}

namespace {

using namespace sweep_parts;

Plan plan_of(const SweepConfig& cfg) {
  const bool by_batch = cfg.over == SweepOver::Batch;
  Plan p{by_batch, by_batch ? cfg.batch_sizes.size() : cfg.lrs.size(), {}};
  if (p.by_batch)
    for (const auto& n : cfg.norms)
      if (norm(n).batch_statistics) p.bns.push_back(n);
  return p;
}

// Every configuration, validated before anything trains.
std::vector<CheckedRun> sweep_configs(const SweepConfig& cfg, const Plan& plan, const Splits& data) {
  if (cfg.norms.empty() || cfg.seeds.empty()) throw Error("sweep: needs at least one norm and one seed");
  if (plan.points == 0) throw Error(plan.by_batch ? "sweep: needs at least one batch size" : "sweep: needs at least one learning rate");
  if (cfg.reference_batch <= 0) throw Error("sweep: the reference batch must be positive");
  std::vector<CheckedRun> configs;
  for (const auto& n : cfg.norms)
    for (size_t i = 0; i < plan.points; ++i)
      for (uint64_t seed : cfg.seeds) {
        TrainConfig c = cfg.base;
        c.model.norm = n;
        c.seed = seed;
        if (plan.by_batch) {
          c.batch_size = cfg.batch_sizes[i];
          c.lr = scaled_lr(cfg, c.batch_size);
          c.warmup_steps = scaled_warmup(cfg, c.batch_size);
        } else {
          c.lr = cfg.lrs[i];
        }
        c.bn_three_ways = plan.by_batch && norm(n).batch_statistics;
        c.eval_last = 1;  // the final score is the last epoch's
        c.loss_every = std::max<int64_t>(1, steps_per_run(c, data) / 200);
        configs.push_back(check_run(c, data));
      }
  return configs;
}

Points points_of(const SweepConfig& cfg, const Plan& plan, const std::vector<RunResult>& runs) {
  Points pts;
  for (const auto& n : cfg.norms)
    for (size_t i = 0; i < plan.points; ++i) pts[n].push_back(Point{plan.x(cfg, i)});
  for (const RunResult& r : runs) {
    const double x = plan.by_batch ? double(r.config.batch_size) : r.config.lr;
    for (Point& p : pts[r.config.model.norm])
      if (p.x == x) {
        p.acc.push_back(final_of(r, &EpochRecord::test_acc));
        p.precise.push_back(final_of(r, &EpochRecord::test_acc_precise));
        p.batch.push_back(final_of(r, &EpochRecord::test_acc_batch));
        if (r.diverged) ++p.diverged;
      }
  }
  return pts;
}

// runs.csv, epochs.csv and summary.csv.
void write_tables(const SweepConfig& cfg, const Plan& plan, const std::vector<RunResult>& runs, const Points& pts,
                  const StudyContext& ctx, bool has_val) {
  RunTable runs_csv({"diverged", "diverged_step", "final_test_acc", "final_test_acc_precise", "final_test_acc_batch",
                     "final_test_loss"},
                    ctx.dataset);
  RunTable epochs_csv(epoch_columns(has_val, true), ctx.dataset);
  for (const RunResult& r : runs) {
    runs_csv.add(r, {r.diverged ? "1" : "0", std::to_string(r.diverged_step), fmt(final_of(r, &EpochRecord::test_acc)),
                     fmt(final_of(r, &EpochRecord::test_acc_precise)), fmt(final_of(r, &EpochRecord::test_acc_batch)),
                     fmt(final_of(r, &EpochRecord::test_loss))});
    for (const auto& e : r.epochs) epochs_csv.add(r, epoch_cells(e, has_val, true));
  }
  // Per norm and point: the runs, how many diverged, and each evaluation's mean over the seeds
  // with its std, standard error and 95% interval (n: the runs that did not diverge).
  std::vector<std::string> header{"norm", plan.by_batch ? "batch_size" : "lr", "runs", "diverged"};
  for (const char* e : {"test_acc", "precise_acc", "batch_stats_acc"})
    for (auto& c : interval_columns(e)) header.push_back(c);
  CsvTable summary(header);
  for (const auto& n : cfg.norms)
    for (const Point& p : pts.at(n)) {
      std::vector<std::string> row{n, fmt(p.x), std::to_string(p.acc.size()), std::to_string(p.diverged)};
      for (const auto* v : {&p.acc, &p.precise, &p.batch})
        for (auto& c : interval_values(*v)) row.push_back(c);
      summary.add_row(row);
    }
  runs_csv.write(ctx.out / "runs.csv");
  epochs_csv.write(ctx.out / "epochs.csv");
  summary.write(ctx.out / "summary.csv");
}

// The manifest, with where the time went per run (not in the CSVs: they stay byte-identical).
nlohmann::json sweep_manifest(const SweepConfig& cfg, const std::vector<RunResult>& runs, const StudyContext& ctx,
                              double wall) {
  nlohmann::json base = to_json(cfg.base);
  base["eval_last"] = 1;
  nlohmann::json man = manifest(ctx,
                                {{"study", "sweep"}, {"over", sweep_over_name(cfg.over)}, {"base", base}, {"batch_sizes", cfg.batch_sizes},
                                 {"lrs", cfg.lrs}, {"reference_batch", cfg.reference_batch}, {"norms", cfg.norms},
                                 {"seeds", cfg.seeds}},
                                wall);
  if (cfg.lr_scaling != LrScaling::Linear) man["lr_scaling"] = lr_scaling_name(cfg.lr_scaling);
  nlohmann::json timing = nlohmann::json::array();
  for (const RunResult& r : runs)
    timing.push_back({{"norm", r.config.model.norm}, {"batch_size", r.config.batch_size}, {"lr", r.config.lr},
                      {"seed", r.config.seed}, {"steps", r.total_steps}, {"seconds", r.seconds}, {"cpu_seconds", r.cpu_seconds},
                      {"step_seconds", r.step_seconds}, {"data_seconds", r.data_seconds},
                      {"stats_seconds", r.stats_seconds}, {"eval_seconds", r.eval_seconds},
                      {"bn_eval_seconds", r.bn_eval_seconds}});
  man["run_timing"] = timing;
  return man;
}

std::string outcome(const RunResult& r) {
  std::string msg;
  if (r.diverged) msg = "diverged at step " + std::to_string(r.diverged_step);
  else {
    msg = "test accuracy " + fmt(100 * final_of(r, &EpochRecord::test_acc), 4) + "%";
    const double precise = final_of(r, &EpochRecord::test_acc_precise);
    if (r.config.bn_three_ways)
      msg += " (" + (std::isnan(precise) ? std::string() : "precise BN " + fmt(100 * precise, 4) + "%, ") +
             "test-batch stats " + fmt(100 * final_of(r, &EpochRecord::test_acc_batch), 4) + "%)";
  }
  return msg + ", " + fmt(r.seconds, 3) + " s";
}

}  // namespace

double final_of(const RunResult& r, double EpochRecord::*field) {
  if (r.diverged || r.epochs.empty()) return NAN;
  return final_epoch(r).*field;
}

std::string accuracy_cell(const std::vector<double>& v) {
  return interval_cell(v, kPercent);
}

std::string sweep_over_name(SweepOver over) { return over == SweepOver::Batch ? "batch" : "lr"; }

std::string lr_scaling_name(LrScaling s) {
  return s == LrScaling::Linear ? "linear" : s == LrScaling::Sqrt ? "sqrt" : "none";
}

LrScaling lr_scaling_from(const std::string& name) {
  for (LrScaling s : {LrScaling::Linear, LrScaling::Sqrt, LrScaling::None})
    if (lr_scaling_name(s) == name) return s;
  throw Error("unknown learning-rate scaling '" + name + "' (expected linear, sqrt or none)");
}

double scaled_lr(const SweepConfig& cfg, int64_t b) {
  const double ratio = double(b) / double(cfg.reference_batch);
  switch (cfg.lr_scaling) {
    case LrScaling::Sqrt: return cfg.base.lr * std::sqrt(ratio);
    case LrScaling::None: return cfg.base.lr;
    case LrScaling::Linear: break;
  }
  return cfg.base.lr * ratio;
}

std::vector<CheckedRun> sweep_runs(const SweepConfig& cfg, const Splits& data) {
  return sweep_configs(cfg, plan_of(cfg), data);
}

Report run_sweep(const SweepConfig& cfg, const Splits& data, const StudyContext& ctx) {
  return run_sweep(cfg, sweep_runs(cfg, data), data, ctx);
}

Report run_sweep(const SweepConfig& cfg, const std::vector<CheckedRun>& configs, const Splits& data,
                 const StudyContext& ctx) {
  const Plan plan = plan_of(cfg);
  const Runs runs = train_and_record(
      configs, data, ctx,
      [](const TrainConfig& c) {
        return "sweep: norm " + c.model.norm + ", batch " + std::to_string(c.batch_size) + ", lr " + fmt(c.lr, 4) +
               ", seed " + std::to_string(c.seed);
      },
      outcome);
  const Points pts = points_of(cfg, plan, runs.results);
  write_tables(cfg, plan, runs.results, pts, ctx, data.validation.size() > 0);
  Report rep{plan.by_batch ? "Batch-size sensitivity" : "Learning-rate sensitivity",
             sweep_markdown(cfg, plan, pts, ctx, sweep_plots(cfg, plan, pts, ctx))};
  if (plan.by_batch)
    for (const auto& [n, points] : pts)
      for (const Point& p : points) rep.sweep_accuracy[n].emplace_back(p.x, p.acc);
  return write_study_report(ctx, runs, "sweep", rep, sweep_manifest(cfg, runs.results, ctx, runs.wall_seconds));
}

}  // namespace normlab::experiments::studies
