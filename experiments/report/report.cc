// report.md, manifest.json and shared report pieces.
#include "experiments/report/report.h"

#include "dist/dist.h"

#include <cmath>
#include <thread>

#include "autograd/kernels/target.h"
#include "autograd/parallel.h"
#include "experiments/records/records.h"
#include "experiments/registry/layers.h"
#include "experiments/registry/optimizers.h"
#include "experiments/report/plot.h"
#include "experiments/support/git_commit.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

nlohmann::json manifest(const StudyContext& ctx, const nlohmann::json& config, double wall_seconds) {
  nlohmann::json m;
  m["normlab"] = NORMLAB_VERSION;  // the version (the project() version in CMakeLists.txt)
  m["command"] = ctx.command_line;
  if (!ctx.settings.is_null()) m["settings_typed"] = ctx.settings;
  m["git_commit"] = git_commit();
  m["highway_target"] = autograd::kernels::active_target();
  m["threads"] = autograd::num_threads();
  m["hardware_threads"] = std::thread::hardware_concurrency();
  m["dataset"] = ctx.dataset;
  m["config"] = config;
  if (!ctx.extra.is_null()) m["settings"] = ctx.extra;
  m["wall_seconds"] = wall_seconds;
  return m;
}

void write_report(const StudyContext& ctx, const Report& rep, const nlohmann::json& manifest_json) {
  write_file_atomic(ctx.out / "report.md", "# " + rep.title + "\n\nCommand: `" + ctx.command_line + "`\n\n" + rep.markdown);
  write_file_atomic(ctx.out / "manifest.json", manifest_json.dump(2) + "\n");
  std::error_code ec;  // the runs are in records.json, the settings in the manifest: the journal is done
  std::filesystem::remove(ctx.out / kJournal, ec);
}

std::string interrupted_note(const RunCounts& runs, const std::string& command) {
  if (!runs.interrupted()) return "";
  return "**Interrupted (Ctrl-C): " + std::to_string(runs.finished) + " of " + std::to_string(runs.total) +
         " runs finished**; the tables and plots below are of those runs only. `normlab " + command +
         " --resume` with the same flags and `--out` trains the rest and rewrites this folder as the complete "
         "result.\n\n";
}

void record_progress(nlohmann::json& m, Report& rep, const RunCounts& runs) {
  m["runs_total"] = runs.total;
  m["runs_finished"] = runs.finished;
  m["runs_reused"] = runs.reused;
  m["interrupted"] = runs.interrupted();
  rep.interrupted = runs.interrupted();
  rep.runs_done = runs.finished;
  rep.runs_total = runs.total;
}

std::string count_of(int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string final_accuracy_rule(int64_t epochs) {
  if (epochs <= 1) return "test accuracy after its one epoch";
  return "test accuracy after its last epoch (epoch " + std::to_string(epochs) + ")";
}

std::string pct(double v) { return std::isfinite(v) ? fmt(100 * v, 4) + "%" : "n/a"; }

std::string ScoreText::format(double v) const { return percent ? pct(v) : std::isfinite(v) ? fmt(v, 4) : "n/a"; }

ScoreText score_text(const TrainConfig& c) {
  if (c.task == data::Task::Regression) return {false, "R²", "r2", "MSE (standardized target)"};
  return {true, "accuracy", "acc", "cross-entropy loss"};
}

std::string display_name(const std::string& n) { return norm(n).display; }

std::string norm_notes(const std::vector<std::string>& norms) {
  std::string md;
  for (const std::string& n : norms)
    if (!norm(n).note.empty()) md += (md.empty() ? "" : " ") + norm(n).note;
  return md.empty() ? md : md + "\n\n";
}

std::string image_links(const std::vector<std::string>& plots) {
  if (plots.empty())
    return gnuplot_available() ? "No plots: no run left a finite value to draw (every run diverged).\n\n"
                               : "No plots: gnuplot is not installed.\n\n";
  std::string md;
  for (const auto& p : plots) md += "![" + p + "](" + p + ".png)\n\n";
  return md;
}

}  // namespace normlab::experiments::report
