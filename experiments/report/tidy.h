// Tidy CSV tables of runs: every row starts with the run's settings (dataset, model, norm, ...),
// then the columns of what it records (one row per run, step, epoch, ...).
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "experiments/run/trainer.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

// The settings columns every tidy CSV starts with, and their values for a run.
std::vector<std::string> settings_header();
std::vector<std::string> settings_cells(const TrainConfig& c, const std::string& dataset);
// The per-epoch columns of epochs.csv after the settings: epoch, step, train, validation (only
// with a validation set: without one they would hold nothing but NaN), test, and with bn_columns
// BatchNorm's precise and test-batch accuracies; `score` names the score columns ("acc", or "r2"
// for regression: ScoreText::csv).
std::vector<std::string> epoch_columns(bool validation, bool bn_columns, const std::string& score = "acc");
// One epoch's cells for those columns.
std::vector<std::string> epoch_cells(const EpochRecord& e, bool validation, bool bn_columns);

// A CSV table whose rows are a run's settings followed by `columns`.
class RunTable {
 public:
  RunTable(std::vector<std::string> columns, std::string dataset);
  // Appends the settings of r's config, then `cells` (as many as the columns).
  void add(const RunResult& r, const std::vector<std::string>& cells);
  // Writes the table atomically to path.
  void write(const std::filesystem::path& path) const { table_.write(path); }

 private:
  CsvTable table_;
  std::string dataset_;
};

// The per-run records as tidy tables: steps.csv, epochs.csv, activations.csv and grad_norms.csv
// in `dir` (epochs.csv with validation columns when `validation`), and evals.csv with the
// evaluations every --eval-every steps when there are any, and input_grad_norms.csv with a sequence
// model's gradient reaching each time step's input (InputGradNorm) when there are any; with the
// landscape probes, shifts.csv (each layer's ICS), landscape.csv (the points along -g) and
// curvature.csv (the Hessian's top eigenvalue and trace at the four points).
void write_run_records(const std::vector<RunResult>& runs, const std::string& dataset, bool validation,
                       const std::filesystem::path& dir);

// The landscape probes' records alone: shifts.csv, landscape.csv (when a run has step probes) and
// curvature.csv (when one has curvature) in dir, each row led by lead(r)'s cells under
// lead_columns (the classifiers' settings columns; a GPT study's norm and seed).
void write_probe_records(const std::vector<RunResult>& runs, const std::vector<std::string>& lead_columns,
                         const std::function<std::vector<std::string>(const RunResult&)>& lead,
                         const std::filesystem::path& dir);

}  // namespace normlab::experiments::report
