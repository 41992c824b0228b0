// A finished run's records as JSON (records.json of a result folder), for every family: what
// `--resume` reads back to skip the runs an interrupted folder holds. Numbers are written to round-trip exactly, NaN as
// null, so the CSV files rebuilt from them are byte for byte those of an uninterrupted command.
#pragma once
#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/config/lm_config.h"
#include "experiments/records/run_result.h"

namespace normlab::experiments {

// A run's settings as JSON (records, manifests, the settings check of a resumed run).
// JSON has no NaN or infinity: json_number writes those as the strings "nan", "inf", "-inf" (finite
// values as numbers, an exact round trip), number_from_json reads both forms back.
nlohmann::json json_number(double v);
double number_from_json(const nlohmann::json& j);

nlohmann::json to_json(const TrainConfig& c);

// The records of a run (its config, losses, epochs, statistics, divergence, timing).
nlohmann::json records_json(const RunResult& r);
// Writes the runs' records to path atomically: {"runs": [...]}.
void write_records(const std::filesystem::path& path, const std::vector<RunResult>& runs);

// A language model's run (train's and the GPT studies'), in the same files: its settings (what
// makes a run the run it is: variant, optimizer and schedule settings, steps, clipping, model,
// corpus, evaluations, sample; a stored run is reused only when they are these), its records
// ({"config": lm_run_settings(s), steps, evals, sample, ...}), records.json of specs[i] trained
// results[i] ({"runs": [...]}, written atomically).
nlohmann::json lm_run_settings(const LmRunSpec& s);
nlohmann::json records_json(const LmRunSpec& s, const RunResult& r);
void write_records(const std::filesystem::path& path, const std::vector<LmRunSpec>& specs,
                   const std::vector<RunResult>& results);

// The runs stored in a records file, by position; std::nullopt when the file does not exist.
// Throws normlab::Error naming the file if it is not a records file.
std::optional<std::vector<nlohmann::json>> read_records(const std::filesystem::path& path);
// The runs an earlier command left in `folder`/records.json (none when folder is empty or the
// file does not exist), completed by the runs that killed commands left in `killed` (their
// partial folders, result_set.h: records.json, then the journal of finished runs) where the
// earlier command holds no run at that position.
std::vector<nlohmann::json> previous_runs(const std::filesystem::path& folder,
                                          const std::vector<std::filesystem::path>& killed = {});

// The journal of finished runs (kJournal in a study's folder): a run is appended, flushed and
// fsynced the moment it finishes, so that a command killed at any point (SIGKILL, power loss, an
// OOM kill) loses no finished run. Its first line is a header ({"normlab_journal": 1, ...header}),
// then one line per run: {"index": i, "records": records_json}. write_report (report.h) removes it
// once records.json holds every run and manifest.json the settings. The file is made at the first run.
inline constexpr const char* kJournal = "finished-runs.jsonl";
class RunJournal {
 public:
  RunJournal(std::filesystem::path path, nlohmann::json header) : path_(std::move(path)), header_(std::move(header)) {}
  // Appends run `index` (+ the offset) with its records (records_json of a classification run, the
  // language models' own); throws normlab::Error naming the file if it cannot.
  void append(size_t index, const nlohmann::json& records);
  void append(size_t index, const RunResult& r) { append(index, records_json(r)); }
  // Where the runs of the next list start among the command's runs (a command of several lists).
  void set_offset(size_t offset) { offset_ = offset; }

 private:
  std::filesystem::path path_;
  nlohmann::json header_;
  size_t offset_ = 0;
};
// The header of the journal at path (null when it has none or cannot be read).
nlohmann::json journal_header(const std::filesystem::path& path);
// The stored run for `config` (the same settings, compared as JSON), or std::nullopt.
std::optional<RunResult> stored_run(const nlohmann::json& stored, const TrainConfig& config);
// The same for a language model's run: stored when it was made with s's settings.
std::optional<RunResult> stored_run(const nlohmann::json& stored, const LmRunSpec& s);

}  // namespace normlab::experiments
