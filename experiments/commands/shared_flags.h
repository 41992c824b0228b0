// Flags that several commands add: a CSV file's layout (train, compare, eval, predict), the
// output folder and threads, and options whose default depends on a preset.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "data/csv.h"

namespace normlab::experiments::commands {

// The flags of a CSV file's layout (pandas's names): separator, comment lines, header, leading
// rows, missing values, columns; also for eval and predict.
void add_csv_format_flags(CLI::App& a, data::CsvOptions& f);
// --out, --quiet and --threads.
void add_output_flags(CLI::App& a, std::string& out, bool& quiet, int& threads);
// An option whose default depends on the data set or a preset (applied after parsing): its
// description states each default, instead of the value CLI11 captured before the presets.
CLI::Option* preset_default(CLI::Option* opt, const std::string& defaults);

}  // namespace normlab::experiments::commands
