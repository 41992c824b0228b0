// Fuzzes the CSV data-set loader: any input must load or throw normlab::Error (file, line, column).
// The first byte picks the label column's name, the task, the separator, the header, comment lines
// and rows to skip; the second what a missing cell does, an extra NA string, columns dropped or
// kept and categorical columns; the rest is the file (gzip when it starts with gzip's magic bytes). The file is also read
// as a test file against itself (train's columns, classes and fill values).
#include "data/csv.h"
#include "fuzz/input_file.h"

using namespace normlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  data::CsvOptions o;
  const char* labels[] = {"label", "species", "y", "a"};
  o.label_column = labels[data[0] % 4];
  o.task = data[0] & 4 ? data::Task::Regression : data::Task::Classification;
  o.delimiter = data[0] & 8 ? ';' : ',';
  o.header = !(data[0] & 16);
  o.comment = data[0] & 32 ? '#' : 0;
  o.skip_rows = data[0] >> 6;
  o.missing = data[1] % 3 == 0 ? data::Missing::Error : data[1] % 3 == 1 ? data::Missing::Drop : data::Missing::Mean;
  if (data[1] & 4) o.na_values = {"?"};
  if (data[1] & 8) o.drop = {"b"};
  if (data[1] & 16) o.keep = {"a", "c"};
  o.categorical_auto = data[1] & 32;
  if (data[1] & 64) o.categorical = {"a"};
  const std::string& path = fuzz::input_file(data + 2, size - 2, ".csv");
  try {
    const data::Dataset d = data::read_csv(path, o);
    d.validate();
    data::read_csv(path, o, d).validate();
  } catch (const Error&) {
  }
  return 0;
}
