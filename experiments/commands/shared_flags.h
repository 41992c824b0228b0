// Flags that several commands add: a CSV file's layout (train, compare, eval, predict), the
// output folder and threads, and options whose default depends on a preset.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "data/csv.h"
#include "experiments/commands/command.h"

namespace normlab::experiments::commands {

// The flags of add_csv_format_flags that a checkpoint's recorded format stands in for when not
// typed (eval, predict), and those of them typed.
inline const std::vector<std::string> kRecordedCsvFlags{"--csv-sep", "--csv-skip-rows", "--csv-comment",
                                                        "--csv-no-header", "--csv-na", "--missing"};
std::vector<std::string> typed_csv_flags(const Given& given);

// The flags of a CSV file's layout (pandas's names): separator, comment lines, header, leading
// rows, missing values, columns; also for eval and predict.
void add_csv_format_flags(CLI::App& a, data::CsvOptions& f);
// --out, --quiet and --threads.
void add_output_flags(CLI::App& a, std::string& out, bool& quiet, int& threads);
// An option whose default depends on the data set or a preset (applied after parsing): its
// description states each default, instead of the value CLI11 captured before the presets.
CLI::Option* preset_default(CLI::Option* opt, const std::string& defaults);

}  // namespace normlab::experiments::commands
