// `normlab study` (make run): the convergence comparison and the batch-size sweep, one report.
#include <chrono>
#include <cstdio>

#include "data/split.h"
#include "experiments/output.h"
#include "experiments/report.h"
#include "experiments/study.h"

namespace normlab::experiments {

namespace {

// The sweep's training set: the first `limit` training samples (0: all).
Splits sweep_data(const Splits& data, int64_t limit) {
  Splits d = data;
  if (limit > 0 && limit < data.train.size()) d.train = data::first_n(data.train, limit);
  return d;
}

// A part's report with its image links pointing into its subfolder.
std::string section(const Report& r, const std::string& sub_dir) {
  std::string fixed;
  for (size_t i = 0; i < r.markdown.size(); ++i) {
    fixed += r.markdown[i];
    if (r.markdown[i] == '(' && i > 0 && r.markdown[i - 1] == ']') fixed += sub_dir;
  }
  return "## " + r.title + "\n\n" + fixed + "\n";
}

}  // namespace

void validate(const StudyConfig& cfg, const Splits& data) {
  compare_runs(cfg.compare, data);
  sweep_runs(cfg.sweep, sweep_data(data, cfg.sweep_train_limit));
}

Report run_study(const StudyConfig& cfg, const DataSpec& spec, const Splits& data, const StudyContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  const Splits sweep = sweep_data(data, cfg.sweep_train_limit);
  validate(cfg, data);
  prepare_output_dir(ctx.out);
  StudyContext part = ctx;
  part.out = ctx.out / "compare";
  if (!ctx.resume_from.empty()) part.resume_from = ctx.resume_from / "compare";
  const Report a = run_compare(cfg.compare, data, part);
  part.out = ctx.out / "sweep";
  if (!ctx.resume_from.empty()) part.resume_from = ctx.resume_from / "sweep";
  part.dataset = describe(spec, sweep);
  const Report b = run_sweep(cfg.sweep, sweep, part);
  Report rep{"normlab study: BatchNorm vs LayerNorm", "", false, a.interrupted || b.interrupted,
             a.runs_done + b.runs_done, a.runs_total + b.runs_total};
  std::string md = "# " + rep.title + "\n\nCommand: `" + ctx.command_line + "`\n\n";
  if (rep.interrupted)
    md += "**Interrupted (Ctrl-C): " + std::to_string(rep.runs_done) + " of " + std::to_string(rep.runs_total) +
          " runs finished.** `normlab study --resume` with the same flags and `--out` trains the rest.\n\n";
  md += "Data: " + describe(spec, data) + "\n\n";
  if (sweep.train.size() < data.train.size())
    md += "To fit the time budget, the batch-size sweep trains on the first " + std::to_string(sweep.train.size()) +
          " training images only (`--sweep-train-limit`); `normlab sweep --full` runs the complete protocol.\n\n";
  md += section(a, "compare/") + section(b, "sweep/");
  write_file_atomic(ctx.out / "report.md", md);
  nlohmann::json man = manifest(ctx, {{"study", "study"}, {"sweep_train_limit", cfg.sweep_train_limit}},
                                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  man["parts"] = {"compare", "sweep"};
  man["runs_total"] = rep.runs_total;
  man["runs_finished"] = rep.runs_done;
  man["interrupted"] = rep.interrupted;
  write_file_atomic(ctx.out / "manifest.json", man.dump(2) + "\n");
  if (!ctx.quiet) std::fputs(md.c_str(), stdout);
  return rep;
}

}  // namespace normlab::experiments
