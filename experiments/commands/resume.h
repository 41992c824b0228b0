// What `--resume` of compare, sweep and study continues: the earlier results of the same command
// with the same flags, in --out and in the partial folders of commands killed while they wrote it.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace normlab::experiments::commands {

// The earlier results a resumed command reuses.
struct ResumeSources {
  bool out = false;                           // --out's records.json
  std::vector<std::filesystem::path> killed;  // partial folders of killed commands (result_set.h)
};

// The command and the flags typed, but those that do not change the results (--out, --resume,
// --quiet, --threads): {"command": "sweep", "flags": {"--lrs": "0.1,0.2"}}, recorded in the
// manifest and the journal of finished runs (StudyContext::settings).
nlohmann::json typed_settings(const CLI::App& app, const std::string& command);

// The earlier results to continue for `--out out` (records: where the command keeps its
// records.json, relative to --out), made with `settings` (typed_settings). Throws normlab::Error
// when there is none: naming the other command or each flag that differs (with both values) when
// the results there were made by another command or with other flags.
ResumeSources resume_sources(const std::string& out, const std::string& records, const nlohmann::json& settings);

}  // namespace normlab::experiments::commands
