// A finished run's records as JSON (records.json of a result folder): what `--resume` reads back
// to skip the runs an interrupted folder holds. Numbers are written to round-trip exactly, NaN as
// null, so the CSV files rebuilt from them are byte for byte those of an uninterrupted command.
#pragma once
#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/trainer.h"

namespace normlab::experiments {

// A run's settings as JSON (records, manifests, the settings check of a resumed run).
nlohmann::json to_json(const TrainConfig& c);

// The records of a run (its config, losses, epochs, statistics, divergence, timing).
nlohmann::json records_json(const RunResult& r);
// Writes the runs' records to path atomically: {"runs": [...]}.
void write_records(const std::filesystem::path& path, const std::vector<RunResult>& runs);

// The runs stored in a records file, by position; std::nullopt when the file does not exist.
// Throws normlab::Error naming the file if it is not a records file.
std::optional<std::vector<nlohmann::json>> read_records(const std::filesystem::path& path);
// The runs an earlier command left in `folder`/records.json (none when folder is empty or the
// file does not exist).
std::vector<nlohmann::json> previous_runs(const std::filesystem::path& folder);
// The stored run for `config` (the same settings, compared as JSON), or std::nullopt.
std::optional<RunResult> stored_run(const nlohmann::json& stored, const TrainConfig& config);

}  // namespace normlab::experiments
