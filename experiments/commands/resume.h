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

// A data set's files as a user names them: "--text notes.txt", "the fortunes (/usr/share/games/fortunes)".
struct DataSource {
  std::string name;
  std::vector<std::string> files;
};
// The text files of a language model's corpus: `text` (--text, "" for the fortunes), named by `flag`.
DataSource text_source(const std::string& flag, const std::string& text);
// Each source's size and CRC-32 over its files, in order: [{"data": name, "bytes": n, "crc32":
// "89abcdef"}] (a file that cannot be read: bytes -1), recorded in the settings ("data") so that
// --resume refuses results made from other data. Reads every byte (Fashion-MNIST: 30 MB, 0.03 s).
nlohmann::json data_fingerprint(const std::vector<DataSource>& sources);

// The earlier results to continue for `--out out` (records: where the command keeps its
// records.json, relative to --out), made with `settings` (typed_settings). Throws normlab::Error
// when there is none: naming the other command or each flag that differs (with both values) when
// the results there were made by another command or with other flags, or the data file that
// changed (its size and CRC-32 then and now) when they were made from other data.
ResumeSources resume_sources(const std::string& out, const std::string& records, const nlohmann::json& settings);

}  // namespace normlab::experiments::commands
