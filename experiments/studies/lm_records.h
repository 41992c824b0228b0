// The records of the GPT studies' runs as JSON, in the formats of records.h (records.json:
// {"runs": [...]}; the journal of finished runs, kJournal: a header line, then {"index", "records"}
// per run), so that `--resume` (commands/resume.h, records.h previous_runs) finds them: a finished
// run read back is the run, to the bit, and the files rebuilt from it are those of an
// uninterrupted command. Numbers round-trip exactly; NaN is written as null.
#pragma once
#include <cstddef>
#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/records/context.h"
#include "experiments/records/records.h"
#include "experiments/run/queue.h"
#include "experiments/studies/lm_runs.h"

namespace normlab::experiments::studies {

// What makes a run the run it is (variant, optimizer and schedule settings, steps, clipping, model,
// corpus, evaluations, sample): a stored run is reused only when its settings are these.
nlohmann::json lm_run_settings(const LmRunSpec& s);

// A finished run's records: {"config": lm_run_settings(s), steps, evals, sample, ...}.
nlohmann::json lm_records_json(const LmRunSpec& s, const LmRunResult& r);
// The stored run j when it was made with s's settings; std::nullopt otherwise (or when j is no run).
std::optional<LmRunResult> stored_lm_run(const nlohmann::json& j, const LmRunSpec& s);

// Writes records.json (specs[i] trained results[i]) atomically.
void write_lm_records(const std::filesystem::path& path, const std::vector<LmRunSpec>& specs,
                      const std::vector<LmRunResult>& results);

// The finished runs of a GPT study (run/queue.h).
using LmRuns = RunSet<LmRunResult>;

// The runs of a study in the run queue (run/queue.h): one progress bar over all their steps
// labelled lm_run_label, a line "label: outcome" when a run ends, T runs side by side on T kernel
// threads, one thread each (the same bits as one after another). A run whose records `previous`
// holds at its position (records.h previous_runs: an earlier, interrupted command's) with the same
// settings is taken from there instead of trained (stored_lm_run). Every run finished is appended
// to `journal` (when given) the moment it finishes. Ctrl-C stops after the current step: results
// then holds the runs finished before the first unfinished one. In an mpirun job of W processes
// (every rank calls it), rank r trains runs r, r + W, ... and every rank then holds all the
// results, the same as one process's; only rank 0 journals (its own runs).
LmRuns train_lm_runs(const std::vector<LmRunSpec>& specs, bool quiet, const std::string& command,
                     const std::vector<nlohmann::json>& previous = {}, RunJournal* journal = nullptr);

// A GPT study's runs trained (runs that an earlier, interrupted command finished with the same
// settings are taken from ctx's resume folders; each finished run is journaled in ctx.out), then
// ctx.out/records.json written.
LmRuns train_and_record_lm_runs(const std::vector<LmRunSpec>& specs, const StudyContext& ctx,
                                const std::string& command);

}  // namespace normlab::experiments::studies
