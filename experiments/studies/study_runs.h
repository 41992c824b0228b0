// The road every study's runs take, for every family (compare and sweep of the classifiers and of
// the language models): the runs trained in the run queue and recorded (the journal of finished
// runs, --resume, records.json), then, once the study has written its own tables, plots and text,
// its report and manifest with the runs' counts.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/config/lm_config.h"
#include "experiments/records/context.h"
#include "experiments/run/runs.h"

namespace normlab::experiments::studies {

// Trains the runs in the run queue (run/runs.h run_all: a run that an earlier, interrupted command
// finished with the same settings is taken from ctx's resume folders; each finished run is
// journaled in ctx.out the moment it finishes), then writes ctx.out/records.json. In an mpirun job
// every rank calls it (ranks other than 0 with their scratch folder as ctx.out) and then holds
// every result, the same as one process's.
Runs train_and_record(const std::vector<CheckedRun>& runs, const Splits& data, const StudyContext& ctx,
                      const RunLabel& label, const RunOutcome& outcome);
Runs train_and_record(const std::vector<LmRunSpec>& specs, const StudyContext& ctx, const LmRunLabel& label,
                      const RunOutcome& outcome);

// Writes ctx.out/report.md and manifest.json (report.h write_report): rep's title and text with
// the note of an interrupted command first (interrupted_note), man with the runs' counts
// (record_progress). Returns the report as written.
Report write_study_report(const StudyContext& ctx, const Runs& runs, const std::string& command, Report rep,
                          nlohmann::json man);

}  // namespace normlab::experiments::studies
