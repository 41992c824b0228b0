// What every study writes into and gives back: its context (output folder, command line, data
// description, what to resume from) and its report (markdown, and how its runs ended).
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace normlab::experiments {

// What every study needs besides its own settings.
struct StudyContext {
  std::filesystem::path out;   // the study's folder (created if missing)
  bool quiet = false;          // no progress output
  std::string command_line;    // as typed, for the manifest and report
  std::string dataset;         // e.g. "fashion-mnist (20000 train / 10000 test)"
  nlohmann::json extra;        // more settings to record in the manifest
  // train: the data side of the checkpoint's metadata (saved_model.h: classes, features, preprocessing).
  std::map<std::string, std::string> checkpoint_data;
  // --resume: the folder of an earlier command with the same settings, whose records.json holds
  // the runs to reuse (empty: train every run).
  std::filesystem::path resume_from;
  // --resume: the partial folders that killed commands of the same settings left beside --out
  // (result_set.h), whose finished runs are reused too (their journals, records.h).
  std::vector<std::filesystem::path> resume_killed;
  // The command and the flags typed ({"command": "sweep", "flags": {"--lrs": "0.1,0.2"}}): in the
  // manifest and the journal's header, what --resume checks before it continues a folder.
  nlohmann::json settings;
  // train: a checkpoint after every N epochs (0: only when Ctrl-C stops the run), in out/checkpoint;
  // and the checkpoint folder to continue from (train --resume; empty: start afresh).
  int64_t checkpoint_every = 0;
  std::filesystem::path resume_checkpoint;
  // train, compare on a CSV file: the defaults chosen from its size, as a sentence ("": none).
  std::string defaults_note;
};

// A study's markdown report section, for a combined report.
struct Report {
  std::string title, markdown;
  bool diverged = false;     // train: the run diverged (no usable model)
  bool interrupted = false;  // Ctrl-C: only the runs finished before it are in the results
  size_t runs_done = 0, runs_total = 0;
  // A batch-size sweep's results: norm -> (batch size, the seeds' final test accuracies; NaN for a
  // run that diverged) in sweep order. The character GPT's sweep: its variants' final validation
  // bits per character (lower is better).
  std::map<std::string, std::vector<std::pair<double, std::vector<double>>>> sweep_accuracy;
  // A comparison's landscape probes: norm -> measure -> the seeds' values (report/why.h why_values:
  // "ics", "beta_smoothness", ...); empty without probes.
  std::map<std::string, std::map<std::string, std::vector<double>>> why;
};

}  // namespace normlab::experiments
