// `normlab sweep --distributed` in an mpirun job: BatchNorm with each rank's own statistics (local)
// against SyncBatchNorm, LayerNorm and GroupNorm, at W ranks and per-rank batch b, beside one
// process at batch b and at the global batch W*b: tables, plots and a report with a computed reading.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "dist/dist.h"
#include "experiments/models/archs.h"
#include "experiments/records/records.h"
#include "experiments/registry/layers.h"
#include "experiments/report/claims.h"
#include "experiments/report/plot.h"
#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/report/tidy.h"
#include "experiments/run/runs.h"
#include "experiments/studies/ddp_cells.h"
#include "experiments/studies/study.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;  // the tables, plots and report text every study writes

namespace {

// SyncBatchNorm in one process is BatchNorm: it is run (and shown) as BatchNorm there.
bool runs_in_one_process(const std::string& n) { return norm(n).in_one_process.empty(); }

// The batch sizes one process trains at: every per-rank batch b and every global batch W*b.
std::vector<int64_t> one_process_batches(const DdpSweepConfig& cfg) {
  std::set<int64_t> all;
  for (int w : cfg.ranks)
    for (int64_t b : cfg.per_rank_batches) all.insert(w * b);
  return {all.begin(), all.end()};
}

CheckedRun run_config(const DdpSweepConfig& cfg, const std::string& n, int w, int64_t per_rank, uint64_t seed,
                       const Splits& data) {
  TrainConfig c = cfg.base;
  c.model.norm = n;
  c.seed = seed;
  c.batch_size = w * per_rank;
  c.lr = cfg.base.lr * double(c.batch_size) / double(cfg.reference_batch);
  c.distributed = w > 1;
  c.ranks = c.distributed ? w : 0;  // recorded as such whether the records are written in its group or not
  c.bn_three_ways = false;
  c.eval_last = 1;  // the final score is the last epoch's
  c.stats_every = 0;
  if (w > 1 && n == local_bn() && per_rank == 1)
    throw Error(norm(n).display + " with each rank's own statistics needs more than one sample per rank (PyTorch: "
                "\"Expected more than 1 value per channel when training\"): give per-rank batches of 2 or more, "
                "or use syncbatch");
  if (w == 1 && norm(n).batch_statistics && per_rank == 1)
    throw Error(norm(n).display + " needs more than one sample per batch (PyTorch: \"Expected more than 1 value per "
                "channel when training\"): give --batch-sizes of 2 or more");
  if (w > 1 && data.train.size() < c.batch_size)
    throw Error("the training set (" + std::to_string(data.train.size()) + " samples) is smaller than one global "
                "batch of " + std::to_string(w) + " ranks x " + std::to_string(per_rank));
  c.loss_every = std::max<int64_t>(1, steps_per_run(c, data) / 200);
  return check_run(c, data);  // the other checks: those of a run over c.ranks ranks at the global batch
}

std::string label(const TrainConfig& c, int w) {
  return "sweep --distributed: norm " + c.model.norm + ", " +
         (w == 1 ? "one process, batch " + std::to_string(c.batch_size)
                 : std::to_string(w) + " ranks x batch " + std::to_string(c.batch_size / w)) +
         ", lr " + fmt(c.lr, 4) + ", seed " + std::to_string(c.seed);
}

std::string outcome(const RunResult& r) {
  if (r.diverged) return "diverged at step " + std::to_string(r.diverged_step) + ", " + fmt(r.seconds, 3) + " s";
  return "test accuracy " + fmt(100 * final_of(r, &EpochRecord::test_acc), 4) + "%, " + fmt(r.seconds, 3) + " s";
}

std::string cell_text(const Cells& cells, const Cell& k) {
  const auto it = cells.find(k);
  return accuracy_cell(it == cells.end() ? std::vector<double>{} : it->second);
}

// One table per W > 1: per-rank batch rows; BatchNorm in one process at b and at W*b, then each
// norm over W ranks.
std::string ranks_table(const DdpSweepConfig& cfg, const Cells& cells, int w) {
  std::ostringstream md;
  md << "**" << w << " ranks.**\n\n| per-rank batch | global batch |";
  const bool bn = has(cfg, local_bn()) || has(cfg, sync_bn());
  if (bn) md << " BatchNorm, one process at the per-rank batch | BatchNorm, one process at the global batch |";
  for (const auto& n : cfg.norms)
    md << " " << (n == local_bn() ? "BatchNorm, each rank's own statistics" : display_name(n)) << ", " << w << " ranks |";
  md << "\n|---|---|";
  for (size_t i = 0; i < cfg.norms.size() + (bn ? 2 : 0); ++i) md << "---|";
  md << "\n";
  for (int64_t b : cfg.per_rank_batches) {
    md << "| " << b << " | " << w * b << " |";
    if (bn) md << " " << cell_text(cells, {local_bn(), 1, b}) << " | " << cell_text(cells, {local_bn(), 1, w * b}) << " |";
    for (const auto& n : cfg.norms) md << " " << cell_text(cells, {n, w, b}) << " |";
    md << "\n";
  }
  return md.str() + "\n";
}

std::string one_process_table(const DdpSweepConfig& cfg, const Cells& cells) {
  std::ostringstream md;
  md << "**One process.**\n\n| batch |";
  size_t cols = 0;
  for (const auto& n : cfg.norms)
    if (runs_in_one_process(n)) md << " " << display_name(n) << " |", ++cols;
  md << "\n|---|";
  for (size_t i = 0; i < cols; ++i) md << "---|";
  md << "\n";
  for (int64_t b : one_process_batches(cfg)) {
    md << "| " << b << " |";
    for (const auto& n : cfg.norms)
      if (runs_in_one_process(n)) md << " " << cell_text(cells, {n, 1, b}) << " |";
    md << "\n";
  }
  return md.str() + "\n";
}

// Accuracy against the per-rank batch (first) or the global batch: BatchNorm in one process, and
// BatchNorm local and SyncBatchNorm over each W > 1 ranks, each the mean over seeds with the 95% CI
// of that mean (2+ seeds). Local BatchNorm and SyncBatchNorm have their norms' styles (solid for
// the first W, then dashed, dash-dotted, ...); one process has BatchNorm's colour, dotted, open circles.
PlotSpec bn_plot(const DdpSweepConfig& cfg, const Cells& cells, bool global) {
  PlotSpec p{global ? "BatchNorm vs the global batch: SyncBatchNorm follows one process at the global batch?"
                    : "BatchNorm vs the per-rank batch: local BatchNorm follows one process at the per-rank batch?",
             global ? "global batch (ranks x per-rank batch)" : "per-rank batch (one process: its batch)",
             "final test accuracy (" + final_accuracy_rule(cfg.base.epochs) + ")"};
  p.log_x = 2;
  p.error_bars = true;
  p.percent_y = true;
  Series one{"BatchNorm, one process"};
  one.style = {norm_style(local_bn()).color, 6, 3};  // dotted, drawn last: visible where a ranks' curve lies on it
  for (int64_t b : one_process_batches(cfg)) {
    const auto it = cells.find({local_bn(), 1, b});
    if (it != cells.end()) add_mean_point(one, double(b), it->second);
  }
  static const int kDashes[] = {0, 2, 4, 5};  // one per number of ranks; 3 (dotted) is one process's
  int k = 0;
  for (int w : cfg.ranks) {
    if (w == 1) continue;
    for (const std::string& n : {local_bn(), sync_bn()}) {
      if (!has(cfg, n)) continue;
      Series s{(n == local_bn() ? "BatchNorm local, " : "SyncBatchNorm, ") + std::to_string(w) + " ranks"};
      s.style = norm_style(n);
      s.style.dash = kDashes[k % 4];
      for (int64_t b : cfg.per_rank_batches) {
        const auto it = cells.find({n, w, b});
        if (it != cells.end()) add_mean_point(s, double(global ? w * b : b), it->second);
      }
      p.series.push_back(s);
    }
    ++k;
  }
  if (!one.x.empty()) p.series.push_back(one);
  return p;
}

std::vector<std::string> plots(const DdpSweepConfig& cfg, const Cells& cells, const StudyContext& ctx) {
  std::vector<std::string> made;
  if (!gnuplot_available() || !(has(cfg, local_bn()) || has(cfg, sync_bn()))) return made;
  if (render_plot(bn_plot(cfg, cells, false), ctx.out, "accuracy_vs_per_rank_batch")) made.push_back("accuracy_vs_per_rank_batch");
  if (render_plot(bn_plot(cfg, cells, true), ctx.out, "accuracy_vs_global_batch")) made.push_back("accuracy_vs_global_batch");
  return made;
}

void write_tables(const DdpSweepConfig& cfg, const std::vector<RunResult>& runs, const Cells& cells, const StudyContext& ctx, bool has_val) {
  RunTable runs_csv({"ranks", "per_rank_batch", "diverged", "diverged_step", "final_test_acc", "final_test_loss"},
                    ctx.dataset);
  std::vector<std::string> epoch_cols{"ranks", "per_rank_batch"};
  for (const auto& c : epoch_columns(has_val, false)) epoch_cols.push_back(c);
  RunTable epochs_csv(epoch_cols, ctx.dataset);
  for (const RunResult& r : runs) {
    const int w = ranks_of(r.config);
    const std::string W = std::to_string(w), b = std::to_string(r.config.batch_size / w);
    runs_csv.add(r, {W, b, r.diverged ? "1" : "0", std::to_string(r.diverged_step),
                     fmt(final_of(r, &EpochRecord::test_acc)), fmt(final_of(r, &EpochRecord::test_loss))});
    for (const auto& e : r.epochs) {
      std::vector<std::string> cells_of{W, b};
      for (const auto& c : epoch_cells(e, has_val, false)) cells_of.push_back(c);
      epochs_csv.add(r, cells_of);
    }
  }
  std::vector<std::string> header{"norm", "ranks", "per_rank_batch", "global_batch", "runs", "diverged"};
  for (auto& c : interval_columns("test_acc")) header.push_back(c);
  CsvTable summary(header);
  for (const auto& [k, v] : cells) {
    const int diverged = static_cast<int>(std::count_if(v.begin(), v.end(), [](double a) { return !std::isfinite(a); }));
    std::vector<std::string> row{k.norm, std::to_string(k.ranks), std::to_string(k.per_rank),
                                 std::to_string(k.ranks * k.per_rank), std::to_string(v.size()), std::to_string(diverged)};
    for (auto& c : interval_values(v)) row.push_back(c);
    summary.add_row(row);
  }
  runs_csv.write(ctx.out / "runs.csv");
  epochs_csv.write(ctx.out / "epochs.csv");
  summary.write(ctx.out / "summary.csv");
}

}  // namespace

std::vector<std::vector<CheckedRun>> ddp_sweep_runs(const DdpSweepConfig& cfg, const Splits& data) {
  if (cfg.norms.empty() || cfg.seeds.empty()) throw Error("sweep --distributed: needs at least one norm and one seed");
  if (cfg.per_rank_batches.empty()) throw Error("sweep --distributed: needs at least one per-rank batch size");
  if (cfg.ranks.empty()) throw Error("sweep --distributed: needs at least one number of ranks (--ranks)");
  if (cfg.reference_batch <= 0) throw Error("sweep --distributed: the reference batch must be positive");
  for (int w : cfg.ranks)
    if (w < 1 || dist::job_size() % w != 0)
      throw Error("--ranks " + std::to_string(w) + ": every run's ranks come from this mpirun job of " +
                  std::to_string(dist::job_size()) + " processes, so each number of ranks must divide " +
                  std::to_string(dist::job_size()) + " (start mpirun -np " + std::to_string(std::max(w, 1)) +
                  " or more, a multiple of each)");
  for (const auto& n : cfg.norms) norm(n);  // throws for an unknown name
  std::vector<std::vector<CheckedRun>> lists;
  for (int w : cfg.ranks) {
    std::vector<CheckedRun> list;
    for (const auto& n : cfg.norms) {
      if (w == 1 && !runs_in_one_process(n)) continue;
      for (int64_t b : w == 1 ? one_process_batches(cfg) : cfg.per_rank_batches)
        for (uint64_t seed : cfg.seeds) list.push_back(run_config(cfg, n, w, b, seed, data));
    }
    lists.push_back(std::move(list));
  }
  return lists;
}

DdpSweepConfig normalize(DdpSweepConfig cfg) {
  std::sort(cfg.ranks.begin(), cfg.ranks.end());
  cfg.ranks.erase(std::unique(cfg.ranks.begin(), cfg.ranks.end()), cfg.ranks.end());
  std::sort(cfg.per_rank_batches.begin(), cfg.per_rank_batches.end());
  cfg.per_rank_batches.erase(std::unique(cfg.per_rank_batches.begin(), cfg.per_rank_batches.end()),
                             cfg.per_rank_batches.end());
  return cfg;
}

Report run_ddp_sweep(const DdpSweepConfig& config, const Splits& data, const StudyContext& ctx) {
  const DdpSweepConfig cfg = normalize(config);
  return run_ddp_sweep(cfg, ddp_sweep_runs(cfg, data), data, ctx);
}

namespace {

// Every list of runs (one per number of ranks) in turn, each run taken from the earlier records
// where they hold it; Ctrl-C in one list leaves the lists after it unstarted.
Runs run_lists(const DdpSweepConfig& cfg, const std::vector<std::vector<CheckedRun>>& lists, const Splits& data,
               const StudyContext& ctx) {
  const std::vector<nlohmann::json> previous = previous_runs(ctx.resume_from, ctx.resume_killed);
  Runs all;
  size_t offset = 0;
  RunJournal journal(ctx.out / kJournal, ctx.settings);
  for (size_t k = 0; k < lists.size(); ++k) {
    const std::vector<CheckedRun>& list = lists[k];
    const bool stopped = all.interrupted();  // Ctrl-C in an earlier part: the rest is not started
    all.total += list.size();
    if (stopped) continue;
    const std::vector<nlohmann::json> prev(previous.begin() + static_cast<ptrdiff_t>(std::min(offset, previous.size())),
                                           previous.begin() + static_cast<ptrdiff_t>(std::min(offset + list.size(), previous.size())));
    const int w = cfg.ranks[k];
    journal.set_offset(offset);
    Runs part =
        run_all(list, data, ctx.quiet, [w](const TrainConfig& c) { return label(c, w); }, outcome, prev, w, &journal);
    for (auto& r : part.results) all.results.push_back(std::move(r));
    all.reused += part.reused;
    all.wall_seconds += part.wall_seconds;
    offset += list.size();
  }
  return all;
}

// The report: the protocol, a table per number of ranks, the plots and the reading.
std::string ddp_markdown(const DdpSweepConfig& cfg, const Runs& all, const Cells& cells, const StudyContext& ctx) {
  const TrainConfig& b = cfg.base;
  std::ostringstream md;
  if (all.interrupted())
    md << "**Interrupted (Ctrl-C): " << all.results.size() << " of " << all.total
       << " runs finished**; the tables below are of those runs only. The same command with `--resume` trains the "
          "rest.\n\n";
  md << "Model " << model_text(b.model) << ", data: " << ctx.dataset << ", "
     << count_of(b.epochs, "epoch") << " per run, " << optimizer_text(b, false) << ", lr = " << fmt(b.lr)
     << " x global batch / " << cfg.reference_batch << ", schedule " << b.schedule << " with "
     << count_of(b.warmup_steps, "warmup step") << ", " << count_of(static_cast<int64_t>(cfg.seeds.size()), "seed")
     << ". Data-parallel runs over W ranks: each rank takes its slice of every global batch of W x per-rank batch "
        "samples, gradients are averaged over the ranks, BatchNorm's running statistics come from rank 0. "
        "BatchNorm with each rank's own statistics normalizes each rank's slice; SyncBatchNorm the whole global "
        "batch. Final accuracy = "
     << final_accuracy_rule(b.epochs) << "; "
     << (cfg.seeds.size() > 1 ? "mean ± 95% confidence interval over the seeds (Student t), " : "one seed: no interval, ")
     << "in %.\n\n";
  for (int w : cfg.ranks)
    if (w > 1) md << ranks_table(cfg, cells, w);
  if (std::find(cfg.ranks.begin(), cfg.ranks.end(), 1) != cfg.ranks.end()) md << one_process_table(cfg, cells);
  md << image_links(plots(cfg, cells, ctx)) << "**Reading.** " << reading(cfg, cells);
  return md.str();
}

// The manifest: the settings, and each run's timing.
nlohmann::json ddp_manifest(const DdpSweepConfig& cfg, const Runs& all, const StudyContext& ctx) {
  nlohmann::json base = to_json(cfg.base);
  base["eval_last"] = 1;
  nlohmann::json man = manifest(ctx,
                                {{"study", "sweep --distributed"}, {"base", base}, {"per_rank_batches", cfg.per_rank_batches},
                                 {"ranks", cfg.ranks}, {"job_processes", dist::job_size()},
                                 {"reference_batch", cfg.reference_batch}, {"norms", cfg.norms}, {"seeds", cfg.seeds}},
                                all.wall_seconds);
  nlohmann::json timing = nlohmann::json::array();
  for (const RunResult& r : all.results) {
    timing.push_back({{"norm", r.config.model.norm}, {"ranks", ranks_of(r.config)}, {"batch_size", r.config.batch_size},
                      {"seed", r.config.seed}, {"steps", r.total_steps}, {"seconds", r.seconds},
                      {"step_seconds", r.step_seconds}, {"eval_seconds", r.eval_seconds}});
  }
  man["run_timing"] = timing;
  return man;
}

}  // namespace

Report run_ddp_sweep(const DdpSweepConfig& cfg, const std::vector<std::vector<CheckedRun>>& lists, const Splits& data,
                     const StudyContext& ctx) {
  prepare_output_dir(ctx.out);
  const Runs all = run_lists(cfg, lists, data, ctx);
  Cells cells;
  for (const RunResult& r : all.results) {
    const int w = ranks_of(r.config);
    cells[{r.config.model.norm, w, r.config.batch_size / w}].push_back(final_of(r, &EpochRecord::test_acc));
  }
  write_tables(cfg, all.results, cells, ctx, data.validation.size() > 0);
  write_records(ctx.out / "records.json", all.results);
  Report rep{"Local BatchNorm vs SyncBatchNorm over ranks", ddp_markdown(cfg, all, cells, ctx)};
  nlohmann::json man = ddp_manifest(cfg, all, ctx);
  record_progress(man, rep, all);
  write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments::studies
