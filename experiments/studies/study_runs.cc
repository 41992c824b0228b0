// The road every study's runs take: trained, recorded, reported (study_runs.h).
#include "experiments/studies/study_runs.h"

#include "experiments/records/records.h"
#include "experiments/report/report.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

Runs train_and_record(const std::vector<CheckedRun>& runs, const Splits& data, const StudyContext& ctx,
                      const RunLabel& label, const RunOutcome& outcome) {
  prepare_output_dir(ctx.out);
  RunJournal journal(ctx.out / kJournal, ctx.settings);
  Runs done = run_all(runs, data, ctx.quiet, label, outcome, previous_runs(ctx.resume_from, ctx.resume_killed), 1,
                      &journal);
  write_records(ctx.out / "records.json", done.results);
  return done;
}

Runs train_and_record(const std::vector<LmRunSpec>& specs, const StudyContext& ctx, const LmRunLabel& label,
                      const RunOutcome& outcome) {
  prepare_output_dir(ctx.out);
  RunJournal journal(ctx.out / kJournal, ctx.settings);
  Runs done = run_all(specs, ctx.quiet, label, outcome, previous_runs(ctx.resume_from, ctx.resume_killed), &journal);
  write_records(ctx.out / "records.json", specs, done.results);
  return done;
}

Report write_study_report(const StudyContext& ctx, const Runs& runs, const std::string& command, Report rep,
                          nlohmann::json man) {
  rep.markdown = report::interrupted_note(runs, command) + rep.markdown;
  report::record_progress(man, rep, runs);
  report::write_report(ctx, rep, man);
  return rep;
}

}  // namespace normlab::experiments::studies
