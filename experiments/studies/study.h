// The studies behind the normlab subcommands: one training run (train), the convergence comparison
// of norms (compare), the batch-size or learning-rate sweep (sweep), and the default study (study:
// compare + batch-size sweep, one report). Each writes tidy CSV files, plots, report.md and
// manifest.json into its own folder, every file atomically.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/records/context.h"
#include "experiments/registry/datasets.h"
#include "experiments/run/trainer.h"
#include "experiments/studies/lm_sweep.h"

namespace normlab::experiments::studies {

// The batch sizes of the batch-size sweep: the default, and with --quick.
inline const std::vector<int64_t> kSweepBatches{2, 4, 8, 16, 32, 64, 128, 256};
inline const std::vector<int64_t> kQuickSweepBatches{2, 8, 32, 128};
// The study's MLP sweep on Fashion-MNIST (make run): kSweepBatches without 16 and 64, for time.
inline const std::vector<int64_t> kStudySweepBatches{2, 4, 8, 32, 128, 256};

struct CompareConfig {
  TrainConfig base;
  std::vector<std::string> norms{"none", "batch", "layer"};
  std::vector<uint64_t> seeds{0, 1, 2};
  double target_accuracy = 0.85;  // steps/epochs to reach this validation (or test) accuracy
};

// What a sweep varies: the batch size (the learning rate scaled with it) or the learning rate.
enum class SweepOver { Batch, LearningRate };
// "batch" or "lr", as --over takes it and the manifests record it.
std::string sweep_over_name(SweepOver over);

// How a batch-size sweep sets the learning rate at batch b from base.lr at the reference batch r:
// linear lr = base.lr b / r (Goyal et al. 2017, for SGD), sqrt lr = base.lr sqrt(b / r) (the
// square-root rule of Malladi et al. 2022, for Adam), none lr = base.lr at every batch.
enum class LrScaling { Linear, Sqrt, None };
// "linear", "sqrt", "none": as --lr-scaling takes it and the manifests record it.
std::string lr_scaling_name(LrScaling scaling);
// The scaling called `name`; throws normlab::Error naming the three for another.
LrScaling lr_scaling_from(const std::string& name);

struct SweepConfig {
  TrainConfig base;                // base.lr is the learning rate at reference_batch
  SweepOver over = SweepOver::Batch;
  std::vector<int64_t> batch_sizes = kSweepBatches;
  std::vector<double> lrs{0.01, 0.03, 0.1, 0.3, 1.0, 3.0};
  int64_t reference_batch = 128;   // lr = base.lr * batch / reference_batch (linear scaling)
  std::vector<std::string> norms{"none", "batch", "layer"};
  std::vector<uint64_t> seeds{0, 1, 2};
  LrScaling lr_scaling = LrScaling::Linear;  // the rule of the lr at each batch size (--over batch)
};

// The learning rate of a batch-size sweep's runs at batch b (cfg.lr_scaling).
double scaled_lr(const SweepConfig& cfg, int64_t b);
// The warmup of a batch-size sweep's runs at batch b: base.warmup_steps at the reference batch,
// scaled to the same samples, round(warmup x reference / b) (at least 1; 0 without a warmup).
int64_t scaled_warmup(const SweepConfig& cfg, int64_t b);

// The local-BatchNorm vs SyncBatchNorm experiment (sweep --distributed, in an mpirun job): for
// each number of ranks W > 1 in `ranks` and each per-rank batch b, a data-parallel run over W ranks
// with the global batch W*b, under each norm ("batch" is BatchNorm with each rank's own statistics,
// "syncbatch" over the global batch); W = 1 is one process at every batch size b and W*b, the
// reference. lr = base.lr * global batch / reference_batch.
struct DdpSweepConfig {
  TrainConfig base;
  std::vector<int64_t> per_rank_batches{2, 4, 8};
  std::vector<int> ranks{1, 2};
  int64_t reference_batch = 128;
  std::vector<std::string> norms{"batch", "syncbatch", "layer", "group"};
  std::vector<uint64_t> seeds{0, 1};
};

// The default study: the comparison, and the batch-size sweep on a random subset of
// sweep_train_limit training samples (0: all; the first of the shuffled training split).
struct StudyConfig {
  CompareConfig compare;
  SweepConfig sweep;
  int64_t sweep_train_limit = 0;
  // The CNN part (make run on Fashion-MNIST): a comparison and a batch-size sweep of the study's CNN
  // on a random subset of cnn_train_limit training images; off when cnn is false.
  bool cnn = false;
  CompareConfig cnn_compare;
  SweepConfig cnn_sweep;
  int64_t cnn_train_limit = 0;
  // The LSTM part (make run on Fashion-MNIST): a comparison of the norms at one batch size (loss
  // curves, the gradient reaching each time step) and a batch-size sweep of the study's LSTM on
  // rows of pixels, on a random subset of lstm_train_limit training images, both scored on the
  // first lstm_test_limit test images (no validation split: the comparison's target is checked on
  // them); off when lstm is false.
  bool lstm = false;
  CompareConfig lstm_compare;
  SweepConfig lstm_sweep;
  int64_t lstm_train_limit = 0;
  int64_t lstm_test_limit = 0;  // the LSTM part scores on the first N test images (0: all)
  // The character GPT part (make run): a batch-size sweep of a small GPT on a text corpus with the
  // same number of training tokens at every batch size; off when gpt is false.
  bool gpt = false;
  LmSweepConfig gpt_sweep;
  // The Why part (make run on Fashion-MNIST): a comparison of the MLP with the landscape probes
  // (internal covariate shift, the loss along -g, the curvature) on a random subset of
  // why_train_limit training images, scored on the test set; off when why is false. The LSTM
  // comparison's base then carries its own probes (probe_every).
  bool why = false;
  CompareConfig why_compare;
  int64_t why_train_limit = 0;
};

// The runs of a comparison (each norm, each seed), each checked: throws normlab::Error for
// settings that cannot train.
std::vector<CheckedRun> compare_runs(const CompareConfig& config, const Splits& data);
// The runs of a sweep (each norm, each point, each seed), each checked.
std::vector<CheckedRun> sweep_runs(const SweepConfig& config, const Splits& data);
// The local-vs-sync experiment's settings with its ranks and per-rank batches sorted, duplicates removed.
DdpSweepConfig normalize(DdpSweepConfig config);
// The runs of the local-vs-sync experiment, one list per number of ranks (config.ranks' order), each
// checked.
std::vector<std::vector<CheckedRun>> ddp_sweep_runs(const DdpSweepConfig& config, const Splits& data);
// A run's final value of an epoch field: its value after the last epoch (every BatchNorm
// evaluation mode at that same point); NaN for a run that diverged or has no epoch.
double final_of(const RunResult& r, double EpochRecord::*field);
// Final accuracies (fractions) of one setting over seeds as a report cell: "mean ± 95% CI" in %
// (the mean alone for one seed), "diverged", or "not run".
std::string accuracy_cell(const std::vector<double>& v);
// The study's runs, each part's checked against its data (the sweep on its limited training set).
struct StudyPlan {
  StudyConfig config;
  // The sweep's and the CNN part's data (the test set the same); the sweeps' without the
  // validation split, which they do not evaluate.
  Splits sweep_data, cnn_data, cnn_sweep_data, lstm_sweep_data;  // the LSTM's comparison uses its sweep's
  Splits why_data;
  std::vector<CheckedRun> compare, sweep, cnn_compare, cnn_sweep, lstm_compare, lstm_sweep, why_compare;
  std::vector<LmRunSpec> gpt_sweep;
};
StudyPlan plan_study(const StudyConfig& config, const Splits& data);

// One run (checked): steps.csv, epochs.csv, activations.csv, grad_norms.csv, model.safetensors, plots,
// report.md, manifest.json. A run that diverged saves its weights as model.diverged.safetensors
// (not as a model) and says so in the report; Report::diverged is set.
Report run_train(const CheckedRun& run, const Splits& data, const StudyContext& ctx);
// Convergence of the same model under each norm over several seeds.
Report run_compare(const CompareConfig& config, const std::vector<CheckedRun>& runs, const Splits& data,
                   const StudyContext& ctx);
// The same after compare_runs(config, data).
Report run_compare(const CompareConfig& config, const Splits& data, const StudyContext& ctx);
// Final accuracy against batch size (BatchNorm evaluated three ways) or learning rate.
Report run_sweep(const SweepConfig& config, const std::vector<CheckedRun>& runs, const Splits& data,
                 const StudyContext& ctx);
// The same after sweep_runs(config, data).
Report run_sweep(const SweepConfig& config, const Splits& data, const StudyContext& ctx);
// The local-vs-sync experiment (every rank of the mpirun job calls it; rank 0's ctx writes the results).
// config normalized, runs from ddp_sweep_runs.
Report run_ddp_sweep(const DdpSweepConfig& config, const std::vector<std::vector<CheckedRun>>& runs,
                     const Splits& data, const StudyContext& ctx);
// The same after normalize and ddp_sweep_runs.
Report run_ddp_sweep(const DdpSweepConfig& config, const Splits& data, const StudyContext& ctx);
// The comparison in ctx.out/compare, the sweep in ctx.out/sweep (and with config.cnn the CNN's in
// cnn-compare and cnn-sweep, plus a table of MLP and CNN side by side; with config.lstm the LSTM's
// comparison and sweep in lstm-compare and lstm-sweep; with config.gpt the GPT's in gpt-sweep; with more than one family the table
// of the families side by side), and one report.md over all; every setting is validated before
// anything is written. spec describes the data in the reports.
Report run_study(const StudyPlan& plan, const DataSpec& spec, const Splits& data, const StudyContext& ctx);

}  // namespace normlab::experiments::studies
