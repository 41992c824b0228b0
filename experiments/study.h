// The studies behind the normlab subcommands: one training run (train), the convergence comparison
// of norms (compare), and the batch-size or learning-rate sweep (sweep). Each writes tidy CSV
// files, plots, report.md and manifest.json into its own folder, every file atomically.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/trainer.h"

namespace normlab::experiments {

// What every study needs besides its own settings.
struct StudyContext {
  std::filesystem::path out;   // the study's folder (created if missing)
  bool quiet = false;          // no progress output
  std::string command_line;    // as typed, for the manifest and report
  std::string dataset;         // e.g. "fashion-mnist (20000 train / 10000 test)"
  nlohmann::json extra;        // more settings to record in the manifest
};

struct CompareConfig {
  TrainConfig base;
  std::vector<std::string> norms{"none", "batch", "layer"};
  std::vector<uint64_t> seeds{0, 1};
  double target_accuracy = 0.85;  // steps/epochs to reach this validation (or test) accuracy
};

struct SweepConfig {
  TrainConfig base;                // base.lr is the learning rate at reference_batch
  std::string over = "batch";      // "batch" or "lr"
  std::vector<int64_t> batch_sizes{2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<double> lrs{0.01, 0.03, 0.1, 0.3, 1.0, 3.0};
  int64_t reference_batch = 128;   // lr = base.lr * batch / reference_batch (linear scaling)
  std::vector<std::string> norms{"none", "batch", "layer"};
  std::vector<uint64_t> seeds{0, 1};
};

// A study's markdown report section, for a combined report.
struct Report {
  std::string title, markdown;
};

// One run: steps.csv, epochs.csv, activations.csv, grad_norms.csv, model.safetensors, plots,
// report.md, manifest.json.
Report run_train(const TrainConfig& config, const Splits& data, const StudyContext& ctx);
// Convergence of the same model under each norm over several seeds.
Report run_compare(const CompareConfig& config, const Splits& data, const StudyContext& ctx);
// Final accuracy against batch size (BatchNorm evaluated three ways) or learning rate.
Report run_sweep(const SweepConfig& config, const Splits& data, const StudyContext& ctx);

// The settings columns every tidy CSV starts with, and their values for a run.
std::vector<std::string> settings_header();
std::vector<std::string> settings_cells(const TrainConfig& c, const std::string& dataset);
// The per-epoch columns of epochs.csv after the settings: epoch, step, train, validation (only
// with a validation set: without one they would hold nothing but NaN), test, and with bn_columns
// BatchNorm's precise and test-batch accuracies.
std::vector<std::string> epoch_columns(bool validation, bool bn_columns);
// One epoch's cells for those columns.
std::vector<std::string> epoch_cells(const EpochRecord& e, bool validation, bool bn_columns);
// The manifest common to every study: configuration, seeds, git commit, Highway target, threads,
// wall time.
nlohmann::json manifest(const StudyContext& ctx, const nlohmann::json& config, double wall_seconds);
// TrainConfig as JSON (for manifests).
nlohmann::json to_json(const TrainConfig& c);

}  // namespace normlab::experiments
