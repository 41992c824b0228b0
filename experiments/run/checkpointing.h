// Training checkpoints of `normlab train`: the model (parameters and buffers), the optimizer with
// its schedule position, where the run is in the data and its records so far, in one folder, so
// that `--resume` continues the run to the same bits as a run that was never stopped.
#pragma once
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "experiments/models/evaluate.h"
#include "experiments/records/run_result.h"
#include "experiments/run/loop.h"
#include "optim/optimizer.h"

namespace normlab::experiments {

// Where a run is: the epoch in progress (from 1), the batches of it done, the steps done, and the
// epoch's running training metrics so far.
struct RunPosition : LoopPosition {
  double loss_sum = 0;  // sum over the epoch's batches done of batch loss x batch size
  ScoreMeter score;     // their accuracy (or R^2)
};

// A checkpoint read back: its folder, the run's position and records, and its two tensor files.
struct Checkpoint {
  std::filesystem::path dir;
  RunPosition position;
  nlohmann::json records;  // records_json (records.h) of the run up to the checkpoint
  std::filesystem::path model, optimizer;
};

// Writes a checkpoint of run r into dir (created if missing): model.step-<S>.safetensors,
// optimizer.step-<S>.safetensors (S = p.step; the schedule's position is the optimizer file's
// step), then state.json, which names them, each atomically; then removes older step files. A
// process killed at any point leaves dir holding one whole checkpoint (the new or the previous).
void write_checkpoint(const std::filesystem::path& dir, const RunResult& r, const optim::Optimizer& opt,
                      int64_t schedule_step, const RunPosition& p);

// Reads the checkpoint in dir; throws normlab::Error naming the file when it is missing or not a
// normlab checkpoint.
Checkpoint read_checkpoint(const std::filesystem::path& dir);

// The checkpoint folder to resume from for `where`: where itself when it holds state.json, or
// where/checkpoint; for an output folder also the checkpoint of a command that was killed while
// it wrote that folder (in the partial folder beside it, result_set.h), whichever has more steps.
// std::nullopt when there is none.
std::optional<std::filesystem::path> find_checkpoint(const std::filesystem::path& where);

}  // namespace normlab::experiments
