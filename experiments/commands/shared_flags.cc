// Flags that several commands add (shared_flags.h).
#include "experiments/commands/shared_flags.h"

#include <limits>

#include "experiments/commands/flags.h"

namespace normlab::experiments::commands {

namespace {
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxThreads = 256;
}  // namespace

CLI::Option* preset_default(CLI::Option* opt, const std::string& defaults) {
  opt->description(opt->get_description() + " (default: " + defaults + ")");
  opt->default_str("");
  return opt;
}

void add_csv_format_flags(CLI::App& a, data::CsvOptions& f) {
  a.add_option_function<std::string>(
       "--csv-sep",
       [&f](const std::string& v) {
         if (v == "\\t" || v == "tab" || v == "\t") f.delimiter = '\t';
         else if (v.size() == 1 && v != "\"" && v != "\n" && v != "\r") f.delimiter = v[0];
         else throw CLI::ValidationError("--csv-sep", "expected one character (or tab, \\t), got '" + v + "'");
       },
       "CSV field separator: one character, or tab (default ,)");
  a.add_option_function<std::string>(
       "--csv-comment",
       [&f](const std::string& v) {
         if (v.size() != 1 || v == " " || v == "\"") throw CLI::ValidationError("--csv-comment", "expected one character, got '" + v + "'");
         f.comment = v[0];
       },
       "CSV lines starting with this character are skipped (e.g. #)");
  a.add_flag_callback("--csv-no-header", [&f] { f.header = false; },
                      "the CSV file has no header row: its columns are named 0, 1, 2, ... (--label 4)");
  a.add_option("--csv-skip-rows", f.skip_rows, "lines to skip at the top of the CSV file, before the header")
      ->check(whole(0, kMaxInt));
  a.add_option("--csv-na", f.na_values,
               "more CSV strings read as a missing value, e.g. ?,-999 (always: an empty cell, NA, N/A, NaN, "
               "null, None and pandas's other defaults)")
      ->delimiter(',')
      ->default_str("");
  a.add_option_function<std::string>(
       "--missing",
       [&f](const std::string& v) { f.missing = data::missing_from_name(v); },
       "a missing CSV cell: error (default), drop (its row), mean (the column's mean over the training file)")
      ->check(CLI::IsMember({"error", "drop", "mean"}));
  a.add_option("--csv-drop", f.drop, "CSV columns to leave out, e.g. id,date")->delimiter(',')->default_str("");
  a.add_option("--csv-columns", f.keep, "the only CSV columns to use as features (the label besides)")->delimiter(',')->default_str("");
}

std::vector<std::string> typed_csv_flags(const Given& given) {
  std::vector<std::string> typed;
  for (const std::string& f : kRecordedCsvFlags)
    if (given(f)) typed.push_back(f);
  return typed;
}

void add_output_flags(CLI::App& a, std::string& out, bool& quiet, int& threads) {
  a.add_option("--out", out, "output folder")->check(non_empty())->default_str("out/" + a.get_name());
  a.add_flag("--quiet", quiet, "no progress output");
  a.add_option("--threads", threads, "worker threads (default: all cores); results do not depend on it")
      ->check(whole(1, kMaxThreads));
}

}  // namespace normlab::experiments::commands
