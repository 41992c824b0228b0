// What every study writes besides its CSV files: report.md and manifest.json, and the small
// markdown pieces the reports share.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/records/context.h"
#include "experiments/run/runs.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments::report {

// The manifest common to every study: configuration, git commit, Highway target, threads, wall time.
nlohmann::json manifest(const StudyContext& ctx, const nlohmann::json& config, double wall_seconds);
// Writes ctx.out/report.md ("# title", the command line, the markdown) and ctx.out/manifest.json,
// then removes the journal of finished runs in ctx.out (records.h): the set is complete.
void write_report(const StudyContext& ctx, const Report& rep, const nlohmann::json& manifest_json);

// How many runs a command planned, finished and reused (from an earlier, interrupted command);
// finished < total: Ctrl-C stopped it. Of a study's runs (run/runs.h): run_counts(runs).
struct RunCounts {
  size_t finished = 0, total = 0, reused = 0;
  bool interrupted() const { return finished < total; }
};
inline RunCounts run_counts(const Runs& runs) { return {runs.results.size(), runs.total, runs.reused}; }

// The report's first lines when Ctrl-C stopped the command ("" otherwise): how many runs finished
// and how to finish the rest (`normlab <command> ... --resume`).
std::string interrupted_note(const RunCounts& runs, const std::string& command);
inline std::string interrupted_note(const Runs& runs, const std::string& command) {
  return interrupted_note(run_counts(runs), command);
}
// Records in the manifest how many runs were planned, finished and reused, and whether Ctrl-C
// stopped the command; sets the report's counts likewise.
void record_progress(nlohmann::json& manifest, Report& rep, const RunCounts& runs);
inline void record_progress(nlohmann::json& manifest, Report& rep, const Runs& runs) {
  record_progress(manifest, rep, run_counts(runs));
}

// A fraction as a percentage with 4 significant digits ("87.31%"), "n/a" when not finite.
std::string pct(double v);

// How a run's score and loss read in reports, plots and CSV headers: accuracy in percent and the
// cross-entropy loss (classification), or R^2 as a number and the mean squared error of the
// standardized target (regression).
struct ScoreText {
  bool percent;
  std::string name;  // "accuracy" | "R²"
  std::string csv;   // the CSV columns' suffix: "acc" | "r2"
  std::string loss;  // "cross-entropy loss" | "MSE (standardized target)"
  // A score for the text: "87.31%" or "0.8731" ("n/a" when not finite).
  std::string format(double v) const;
  // The table header's unit: " (%)" or "".
  std::string unit() const { return percent ? " (%)" : ""; }
};
ScoreText score_text(const TrainConfig& c);
// "1 epoch", "5 epochs": a count and its noun, singular for 1 (the noun's plural adds an s).
std::string count_of(int64_t n, const std::string& noun);
// How a run's final accuracy is taken: its last evaluation, after the last epoch ("test accuracy
// after its last epoch (epoch 5)", "test accuracy after its one epoch").
std::string final_accuracy_rule(int64_t epochs);
// The name of a norm for reports and plot legends (the registry's display name).
std::string display_name(const std::string& norm);
// The notes of the registry's norms (NormEntry::note) among `norms`, as one paragraph ("": none).
std::string norm_notes(const std::vector<std::string>& norms);
// Markdown image links for plots written as <name>.png; a sentence saying why there are none.
std::string image_links(const std::vector<std::string>& plots);

}  // namespace normlab::experiments::report
