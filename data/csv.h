// CSV data sets: a header row, a label column chosen by name, every other column a numeric feature.
#pragma once
#include <string>
#include <vector>

#include "data/dataset.h"

namespace normlab::data {

/// What the label column holds: a class (integer or string) or a number to regress.
enum class Task { Classification, Regression };

/// What to do with a missing cell (empty, or one of the NA strings): stop with an error naming it,
/// drop its row, or (features only) put the column's mean over the training file in its place.
enum class Missing { Error, Drop, Mean };
/// "error", "drop" or "mean", as --missing takes it and checkpoints record it; and back (any
/// other name: Error).
std::string missing_name(Missing m);
Missing missing_from_name(const std::string& name);  ///< The Missing named by missing_name (any other name: Error).

/// The strings read as a missing value besides an empty cell: pandas's default na_values.
inline const std::vector<std::string> kDefaultNaValues{
    "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
    "N/A",  "NA",       "NULL", "NaN",    "None",    "n/a",  "nan",  "null"};

/// How to read a CSV file.
struct CsvOptions {
  std::string label_column;               ///< the label column's name, as in the header (required)
  Task task = Task::Classification;       ///< classes or regression targets
  char delimiter = ',';                   ///< field separator (pandas: sep)
  char comment = 0;                       ///< lines starting with it (after spaces) are skipped; 0: none
  bool header = true;                     ///< false: no header row, the columns are named 0, 1, 2, ...
  int64_t skip_rows = 0;                  ///< lines skipped at the top of the file, before the header
  std::vector<std::string> drop;          ///< columns left out (e.g. an id or a date column)
  std::vector<std::string> keep;          ///< if not empty: the only feature columns (the label besides)
  std::vector<std::string> na_values;     ///< more strings read as missing (pandas: na_values)
  std::vector<std::string> categorical;   ///< feature columns to one-hot encode (their cells are category names)
  bool categorical_auto = false;          ///< also every column with a non-numeric cell in the first 1000 rows
  Missing missing = Missing::Error;       ///< what a missing cell does (a missing label: error or drop)
  bool label_optional = false;            ///< read_csv_features: the label column may be absent
};

/// The fields of one CSV line: split at the delimiter, spaces and tabs around each field trimmed,
/// a field in double quotes may hold delimiters ("" inside quotes is one quote). Quoted fields cannot
/// span lines. Throws an unterminated quote as "line <line>, column <k>" (k 1-based) of `file`.
std::vector<std::string> split_csv_line(const std::string& line, char delimiter, const std::string& file,
                                        int64_t line_number);

/// Reads a training (or whole) CSV data set (files over 1 MiB stream through the Fast C++ CSV
/// Parser's io::LineReader; a gzip file, known by its first two bytes, is decompressed whole).
/// Features: every column but the label, in file order, each cell a finite number. Classification:
/// if every label is an integer, classes are those integers sorted numerically (so 0..9 stay 0..9);
/// otherwise the label strings sorted bytewise (as scikit-learn's LabelEncoder). class_names holds
/// them by index. Regression: y (N, 1) holds the label numbers. lines holds each row's line in
/// the file. Categorical columns (options.categorical, categorical_auto) are one-hot encoded:
/// categories sorted as classes are, features "<column>=<category>" (Dataset::categories). BOM, CRLF and blank lines are
/// accepted. Errors name the file, the line and the column: missing or empty file, no header,
/// duplicate or empty column names, a missing label column (with the available columns), a row
/// with the wrong number of fields, a non-numeric cell, a header without data rows, a missing cell
/// under Missing::Error. Missing::Drop leaves out every row with a missing cell (dropped_rows counts
/// them); Missing::Mean fills a missing feature with its column's mean over the file's other rows
/// (Dataset::fill) and still refuses a missing label.
Dataset read_csv(const std::string& path, const CsvOptions& options);

/// Reads a test (or validation) CSV with the training set's columns and class mapping: the same
/// label column and task, the same feature columns by name (any order; they are put in train's
/// order), and every class must be one of train's (an unseen class is an error naming the line).
/// Missing::Mean fills with train's means (train.fill).
Dataset read_csv(const std::string& path, const CsvOptions& options, const Dataset& train);

/// As read_csv with train, but the label column may be absent (files to predict): then the result
/// holds only x, feature_names and lines (no labels, num_classes 0: not a valid training set, so
/// validate() refuses it). With the label column, the same as read_csv.
Dataset read_csv_features(const std::string& path, const CsvOptions& options, const Dataset& train);

}  // namespace normlab::data
