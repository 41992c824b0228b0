// CSV data sets: lines read whole for small files, with the Fast C++ CSV Parser's LineReader for
// large ones; fields split and checked here.
#include "data/csv.h"

// The library's header trips GCC 12's -Wstringop-truncation (a strncpy into a bounded buffer).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#endif
#include <libfccp/csv.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <zlib.h>

namespace normlab::data {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// "file: line 3" / "file: line 3, column 2 "name"": where an error is.
std::string at_line(const std::string& file, int64_t line) {
  return file + ": line " + std::to_string(line);
}
std::string at_cell(const std::string& file, int64_t line, size_t col, const std::string& name) {
  return at_line(file, line) + ", column " + std::to_string(col + 1) + " \"" + name + "\"";
}

// A finite number in s (trimmed; a leading '+' allowed), or nullopt.
std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The integer a class label stands for ("3", "03", "3.0"), or nullopt if it is not one.
std::optional<int64_t> parse_integer_class(std::string_view s) {
  const std::optional<double> v = parse_number(s);
  if (!v || *v != std::floor(*v) || std::fabs(*v) > 9007199254740992.0) return std::nullopt;  // 2^53
  return static_cast<int64_t>(*v);
}

// "a", "b", "c": names quoted, since a name may hold a comma.
// Distinct names (classes, categories) in the order classes take: integers numerically when every
// name is one written plainly ("7", not "07"), else bytewise.
std::vector<std::string> in_class_order(std::vector<std::string> names) {
  const bool integer = std::all_of(names.begin(), names.end(), [](const std::string& c) {
    const std::optional<int64_t> v = parse_integer_class(c);
    return v && std::to_string(*v) == c;
  });
  if (integer)
    std::sort(names.begin(), names.end(),
              [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  else
    std::sort(names.begin(), names.end());
  return names;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", \"" : "\"") + names[i] + "\"";
  return s;
}

// The cell as a float32 feature or target, or an error naming the file, line and column.
float parse_cell(const std::string& cell, const std::string& file, int64_t line, size_t col,
                 const std::string& name) {
  if (trim(cell).empty())
    throw Error(at_cell(file, line, col, name) + ": empty cell (a missing value); expected a number");
  const std::optional<double> v = parse_number(cell);
  if (!v)
    throw Error(at_cell(file, line, col, name) + ": expected a finite number, got \"" + cell +
                "\" (a column that is not a feature, such as an id or a date: --csv-drop \"" + name +
                "\"; a column of categories: --categorical \"" + name + "\")");
  if (std::fabs(*v) > std::numeric_limits<float>::max())
    throw Error(at_cell(file, line, col, name) + ": " + cell + " is outside the float32 range");
  return static_cast<float>(*v);
}

// Splits line into fields, reusing the strings already in `fields` (no allocation per line once
// they have grown); see split_csv_line.
void split_fields(std::string_view line, char delimiter, const std::string& file, int64_t line_number,
                  std::vector<std::string>& fields) {
  size_t count = 0, i = 0;
  const size_t n = line.size();
  while (true) {
    if (count == fields.size()) fields.emplace_back();
    std::string& field = fields[count];
    field.clear();
    while (i < n && line[i] != delimiter && is_space(line[i])) ++i;
    if (i < n && line[i] == '"') {
      // Quoted: up to the closing quote, "" standing for one quote; then only spaces.
      const size_t open = i++;
      bool closed = false;
      while (i < n) {
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') field += '"', i += 2;
          else { closed = true, ++i; break; }
        } else {
          field += line[i++];
        }
      }
      if (!closed)
        throw Error(at_line(file, line_number) + ", column " + std::to_string(count + 1) +
                    ": the quote opened at character " + std::to_string(open + 1) +
                    " is not closed (quoted fields cannot span lines)");
      while (i < n && line[i] != delimiter && is_space(line[i])) ++i;
      if (i < n && line[i] != delimiter)
        throw Error(at_line(file, line_number) + ", column " + std::to_string(count + 1) +
                    ": unexpected text after the closing quote, at character " + std::to_string(i + 1));
    } else {
      const size_t start = i;
      while (i < n && line[i] != delimiter) ++i;
      field.assign(trim(line.substr(start, i - start)));
    }
    ++count;
    if (i >= n) break;
    ++i;  // the delimiter
  }
  fields.resize(count);
}

// The lines of a file, without line breaks ("\n" or "\r\n") and without a UTF-8 byte-order mark.
// A file of up to kWholeFileBytes is read at once and split here: the CSV library's LineReader
// allocates a 48 MB buffer for every file (and a reading thread for files over 32 MB), which costs
// far more than reading a small file; larger files stream through io::LineReader, which holds at
// most 48 MB of the file at a time. Both give the same lines and line numbers.
class Lines {
 public:
  static constexpr uintmax_t kWholeFileBytes = uintmax_t{1} << 20;

  explicit Lines(const std::string& path) {
    if (is_gzip(path)) {
      read_gzip(path);
      return;
    }
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec || size > kWholeFileBytes || !read_whole(path)) reader_.emplace(path);
  }

  // The next line (nullopt at the end of the file); number is its 1-based line number.
  std::optional<std::string_view> next(int64_t& number) {
    if (reader_) {
      char* line = reader_->next_line();
      if (!line) return std::nullopt;
      number = reader_->get_file_line();
      return std::string_view(line);
    }
    if (pos_ >= text_.size()) return std::nullopt;
    size_t end = text_.find('\n', pos_);
    if (end == std::string::npos) end = text_.size();
    std::string_view line(text_.data() + pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end + 1;
    number = ++line_;
    return line;
  }

 private:
  // True when the file starts with gzip's magic bytes 1f 8b.
  static bool is_gzip(const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(path + ": cannot open: " + std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    return std::fread(magic, 1, 2, f.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  }

  // Decompresses a gzip file whole into text_ (zlib); a corrupt or cut stream is an error.
  void read_gzip(const std::string& path) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) throw Error(path + ": cannot open: " + std::strerror(errno));
    std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(gz, &gzclose);
    char buf[1 << 16];
    for (;;) {
      const int got = gzread(gz, buf, sizeof buf);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(gz, &code);
        throw Error(path + ": corrupt gzip data (" + (msg ? msg : "unknown zlib error") + ")");
      }
      if (got == 0) {
        // zlib reports a stream cut short only as a soft Z_BUF_ERROR at the end of the data.
        int code = Z_OK;
        const char* msg = gzerror(gz, &code);
        if (code == Z_BUF_ERROR)
          throw Error(path + ": truncated gzip file (" + (msg ? msg : "unexpected end of file") +
                      "; the compressed data or its CRC and size trailer is missing)");
        break;
      }
      text_.append(buf, static_cast<size_t>(got));
    }
    if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
  }

  // Reads the whole file into text_; false if it grew past kWholeFileBytes meanwhile.
  bool read_whole(const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(path + ": cannot open: " + std::strerror(errno));
    text_.resize(kWholeFileBytes + 1);
    const size_t got = std::fread(text_.data(), 1, text_.size(), f.get());
    if (std::ferror(f.get())) throw Error(path + ": cannot read: " + std::strerror(errno));
    if (got > kWholeFileBytes) return false;
    text_.resize(got);
    if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
    return true;
  }

  std::string text_;  // the whole file (small files)
  size_t pos_ = 0;    // where the next line starts in text_
  int64_t line_ = 0;  // the last line's number
  std::optional<io::LineReader> reader_;  // large files
};

// A hint when a header looks laid out otherwise than the options say: another separator, a
// comment line, or no header at all ("" when nothing stands out).
std::string layout_hint(std::string_view header_line, const CsvOptions& opt) {
  const std::string_view t = trim(header_line);
  if (!opt.comment && !t.empty() && t.front() == '#')
    return " (the first line starts with '#': a comment? --csv-comment '#')";
  for (const char sep : {';', '\t', '|'})
    if (sep != opt.delimiter && t.find(sep) != std::string_view::npos && t.find(opt.delimiter) == std::string_view::npos)
      return std::string(" (the line holds ") + (sep == '\t' ? "tabs" : std::string("'") + sep + "'") +
             " and no '" + opt.delimiter + "': --csv-sep " + (sep == '\t' ? "tab" : std::string("'") + sep + "'") + "?)";
  return "";
}

// scikit-learn's own files (sklearn/datasets/data/iris.csv, wine_data.csv, breast_cancer.csv)
// start with a count line, "150,4,setosa,versicolor,virginica": the number of rows, the number of
// features, then the class names; the rows follow without a header, the class index last. True
// for such a first row: two whole numbers, then only names.
bool sklearn_count_line(const std::vector<std::string>& fields) {
  if (fields.size() < 3) return false;
  for (size_t c = 0; c < fields.size(); ++c) {
    const auto v = parse_number(fields[c]);
    const bool whole = v && *v >= 1 && *v == std::floor(*v);
    if (c < 2 ? !whole : v.has_value()) return false;
  }
  return true;
}

// ---- read: the phases of reading a CSV file -----------------------------------------------------
// The rows skipped at the top, the header, the feature columns and which of them are categorical;
// then every row as floats (a category's id for a categorical column, NaN for a missing cell);
// after the last row: categories sorted, one-hot encoding, missing values filled with column
// means, labels mapped to classes.

// The file being read, how, and the training set that fixes its columns and classes (nullptr when
// the file is itself a training set).
struct Source {
  const std::string& path;
  const CsvOptions& opt;
  const Dataset* train;
};

// The next line that is neither blank nor a comment line (nullopt at the end of the file).
std::optional<std::string_view> next_row(Lines& lines, char comment, int64_t& number) {
  while (const std::optional<std::string_view> line = lines.next(number)) {
    const std::string_view t = trim(*line);
    if (!t.empty() && !(comment && t.front() == comment)) return line;
  }
  return std::nullopt;
}

// The header row or, without one (--csv-no-header), the first row, its columns named 0, 1, 2, ...
struct Header {
  std::vector<std::string> names;  // the column names: none empty, no two alike
  std::string_view text;           // the row's text; valid until the next line is read
  int64_t line = 0;                // its line number in the file
  int64_t header_line = 0;         // line with a header row; 0 without (then the row is data)
  bool has_label = false;          // false only when the label is optional (read_csv_features)
  size_t label_col = 0;            // the label's column; width() when there is none

  size_t width() const { return names.size(); }
  bool has(const std::string& name) const { return std::find(names.begin(), names.end(), name) != names.end(); }
};

// Skips the rows --csv-skip-rows names, then reads the first row that is not blank or a comment.
Header read_first_row(Lines& lines, const Source& src) {
  const CsvOptions& opt = src.opt;
  Header h;
  // Rows skipped at the top (e.g. scikit-learn's "150,4,setosa,versicolor,virginica" line).
  for (int64_t k = 0; k < opt.skip_rows; ++k)
    if (!lines.next(h.line))
      throw Error(src.path + ": the file has " + std::to_string(h.line) + " lines, fewer than the " +
                  std::to_string(opt.skip_rows) + " to skip (--csv-skip-rows)");
  const std::optional<std::string_view> line = next_row(lines, opt.comment, h.line);
  if (!line)
    throw Error(src.path + ": the file is empty" + (opt.skip_rows ? " after the skipped rows" : "") +
                (opt.header ? " (expected a header row with column names)" : " (expected data rows)"));
  h.text = *line;
  h.header_line = opt.header ? h.line : 0;
  h.names = split_csv_line(std::string(*line), opt.delimiter, src.path, h.line);
  if (!opt.header)
    for (size_t c = 0; c < h.names.size(); ++c) h.names[c] = std::to_string(c);
  return h;
}

// Reads the header and checks it: column names present and distinct, not all numbers (a file
// without a header row, read as if it had one), and the label column among them.
Header read_header(Lines& lines, const Source& src) {
  const std::string& path = src.path;
  const CsvOptions& opt = src.opt;
  Header h = read_first_row(lines, src);
  std::set<std::string> seen;
  bool all_numeric = true;
  for (size_t c = 0; c < h.width(); ++c) {
    if (h.names[c].empty())
      throw Error(at_line(path, h.line) + ", column " + std::to_string(c + 1) + ": empty column name in the header");
    if (!seen.insert(h.names[c]).second)
      throw Error(at_cell(path, h.line, c, h.names[c]) + ": duplicate column name in the header");
    all_numeric = all_numeric && parse_number(h.names[c]).has_value();
  }
  if (all_numeric && opt.header)
    throw Error(at_line(path, h.line) + ": no header row (every field is a number: \"" + std::string(trim(h.text)) +
                "\"); expected column names in the first row, or --csv-no-header for a file without them");
  if (opt.header && opt.skip_rows == 0 && sklearn_count_line(h.names))
    throw Error(at_line(path, h.line) + ": \"" + std::string(trim(h.text)) + "\" is scikit-learn's count line (" +
                h.names[0] + " rows, " + h.names[1] + " features, then the class names), not a header: read the "
                "file with --csv-skip-rows 1 --csv-no-header --label " + h.names[1] +
                " (the columns are then named 0, 1, 2, ..., the class index last)");
  const auto label_it = std::find(h.names.begin(), h.names.end(), opt.label_column);
  h.has_label = label_it != h.names.end();
  if (!h.has_label && !opt.label_optional)
    throw Error(at_line(path, h.line) + ": no column \"" + opt.label_column +
                "\" for the label in the header; the columns are: " + join(h.names) + layout_hint(h.text, opt));
  h.label_col = h.has_label ? static_cast<size_t>(label_it - h.names.begin()) : h.width();
  if (h.has_label && h.width() < 2)
    throw Error(at_line(path, h.line) + ": the header has only the label column \"" + opt.label_column +
                "\"; expected at least one feature column");
  return h;
}

// Columns left out: --csv-drop, and with --csv-columns every column it does not name (the label
// is read either way). Each name must be a column of the header, and not the label.
std::vector<bool> unused_columns(const Header& h, const Source& src) {
  const CsvOptions& opt = src.opt;
  for (const auto* names : {&opt.drop, &opt.keep})
    for (const std::string& name : *names) {
      if (!h.has(name))
        throw Error(at_line(src.path, h.line) + ": no column \"" + name + "\" to " +
                    (names == &opt.drop ? "drop (--csv-drop)" : "keep (--csv-columns)") + "; the columns are: " +
                    join(h.names));
      if (h.has_label && name == opt.label_column)
        throw Error("column \"" + name + "\" is the label (--label): it cannot be " +
                    (names == &opt.drop ? "dropped" : "a feature column"));
    }
  std::vector<bool> unused(h.width(), false);
  for (size_t c = 0; c < h.width(); ++c)
    unused[c] = std::find(opt.drop.begin(), opt.drop.end(), h.names[c]) != opt.drop.end() ||
                (!opt.keep.empty() && std::find(opt.keep.begin(), opt.keep.end(), h.names[c]) == opt.keep.end());
  return unused;
}

// The feature columns before one-hot encoding ("sources"): every column but the label and those
// left out, in file order, or in train's order for a test file.
struct Columns {
  std::vector<bool> unused;          // per file column: left out
  std::vector<std::string> sources;  // the feature columns' names
  std::vector<int64_t> source_pos;   // per file column: its index in sources (-1: not a feature)

  int64_t count() const { return static_cast<int64_t>(sources.size()); }
  // True when file column c is a feature column: neither the label nor left out.
  bool is_feature(size_t c, const Header& h) const { return c != h.label_col && !unused[c]; }
};

// The feature columns; a test file must have exactly train's (in any order).
Columns feature_columns(const Header& h, const Source& src) {
  const std::string& path = src.path;
  Columns cols{unused_columns(h, src), {}, std::vector<int64_t>(h.width(), -1)};
  if (!src.train) {
    for (size_t c = 0; c < h.width(); ++c)
      if (cols.is_feature(c, h)) cols.source_pos[c] = cols.count(), cols.sources.push_back(h.names[c]);
    if (cols.sources.empty())
      throw Error(at_line(path, h.line) + ": no feature column left (the columns are: " + join(h.names) + ")");
    return cols;
  }
  const Dataset& train = *src.train;
  cols.sources = train.source_columns.empty() ? train.feature_names : train.source_columns;
  for (size_t c = 0; c < h.width(); ++c) {
    if (!cols.is_feature(c, h)) continue;
    const auto it = std::find(cols.sources.begin(), cols.sources.end(), h.names[c]);
    if (it == cols.sources.end())
      throw Error(at_cell(path, h.line, c, h.names[c]) + ": not a feature column of the training set " + "\"" +
                  train.name + "\" (its features: " + join(cols.sources) + "; --csv-drop leaves a column out)");
    cols.source_pos[c] = it - cols.sources.begin();
  }
  for (const std::string& f : cols.sources)
    if (!h.has(f))
      throw Error(at_line(path, h.line) + ": the header lacks the feature column \"" + f + "\" of the training set \"" +
                  train.name + "\"");
  return cols;
}

// The categorical feature columns (one-hot encoded: a 0/1 feature "<column>=<category>" per
// category, in the column's place) and their categories, by source index.
struct Categories {
  std::vector<bool> is_cat;                                        // the source is categorical
  std::vector<std::map<std::string, int64_t, std::less<>>> index;  // category -> id
  std::vector<std::vector<std::string>> names;                     // id -> category

  bool any() const { return std::find(is_cat.begin(), is_cat.end(), true) != is_cat.end(); }
};

// The categorical columns known before the rows are read: a test file takes train's, with their
// categories in train's order; a training file those --categorical names (its categories are
// gathered from the rows, and --categorical auto adds columns after the first rows).
Categories categorical_columns(const Header& h, const Columns& cols, const Source& src) {
  const int64_t m = cols.count();
  Categories cats{std::vector<bool>(m, false), std::vector<std::map<std::string, int64_t, std::less<>>>(m),
                  std::vector<std::vector<std::string>>(m)};
  if (src.train) {
    for (const auto& [col, names] : src.train->categories) {
      const int64_t j = std::find(cols.sources.begin(), cols.sources.end(), col) - cols.sources.begin();
      if (j == m)
        throw Error(src.path + ": the training set's categorical column \"" + col + "\" is not a feature column");
      cats.is_cat[j] = true, cats.names[j] = names;
      for (size_t k = 0; k < names.size(); ++k) cats.index[j][names[k]] = static_cast<int64_t>(k);
    }
    return cats;
  }
  for (const std::string& name : src.opt.categorical) {
    const auto it = std::find(cols.sources.begin(), cols.sources.end(), name);
    if (it == cols.sources.end())
      throw Error(at_line(src.path, h.line) + ": no feature column \"" + name + "\" to one-hot encode (--categorical)" +
                  (h.has_label && name == src.opt.label_column ? ": it is the label" : "") +
                  "; the feature columns are: " + join(cols.sources));
    cats.is_cat[it - cols.sources.begin()] = true;
  }
  return cats;
}

// Missing cells: empty, or one of the NA strings (the defaults and --csv-na), trimmed.
class MissingCells {
 public:
  explicit MissingCells(const CsvOptions& opt) : na_(kDefaultNaValues.begin(), kDefaultNaValues.end()) {
    na_.insert(opt.na_values.begin(), opt.na_values.end());
  }
  bool operator()(const std::string& cell) const {
    const std::string_view t = trim(cell);
    return t.empty() || na_.count(t) > 0;
  }

 private:
  std::set<std::string, std::less<>> na_;
};

// The error for a missing cell (column c of the row `fields` at line `line`) where `what` was expected.
Error missing_error(const std::string& path, const Header& h, int64_t line, const std::vector<std::string>& fields,
                    size_t c, const std::string& what) {
  return Error(at_cell(path, line, c, h.names[c]) + ": a missing value (" +
               (trim(fields[c]).empty() ? std::string("an empty cell") : "\"" + fields[c] + "\"") + "); expected " +
               what + (c == h.label_col ? "; --missing drop leaves such rows out"
                                        : "; --missing drop leaves such rows out, --missing mean fills in the "
                                          "column's mean"));
}

// The rows read: each one's feature sources as floats, a category's id for a categorical column
// and NaN for a missing cell, with its label and its line in the file.
struct Rows {
  std::vector<float> raw;               // (n, m) row-major, m = the number of sources
  std::vector<float> y;                 // (n) the targets (regression)
  std::vector<std::string> label_text;  // (n) the labels as written (classification)
  std::vector<int64_t> lines;           // (n) the file line of each row
  int64_t n = 0;                        // rows kept
  int64_t dropped = 0;                  // rows left out for a missing cell (--missing drop)
};

// What reading the rows takes: the columns, their categories (a training file's grow as the rows
// name new ones), what a missing cell is; and the rows read.
struct RowReader {
  const Source& src;
  const Header& header;
  const Columns& cols;
  Categories& cats;
  MissingCells is_missing;
  Rows rows;
  std::vector<float> row;  // the row being read, one float per source
};

// The id of category `value` of source j; a training file's first sight of a category adds it.
int64_t category_id(RowReader& r, int64_t line, size_t c, int64_t j, const std::string& value) {
  Categories& cats = r.cats;
  const std::string& name = r.header.names[c];
  auto it = cats.index[j].find(value);
  if (it == cats.index[j].end()) {
    if (r.src.train)
      throw Error(at_cell(r.src.path, line, c, name) + ": category \"" + value +
                  "\" does not occur in the training set \"" + r.src.train->name + "\" (its categories: " +
                  join(cats.names[j]) + ")");
    if (cats.names[j].size() >= (size_t{1} << 24))
      throw Error(at_cell(r.src.path, line, c, name) + ": more than 2^24 categories");
    it = cats.index[j].emplace(value, static_cast<int64_t>(cats.names[j].size())).first;
    cats.names[j].push_back(value);
  }
  return it->second;
}

// Adds one row (its fields, at line `line`) to r.rows, or counts it as dropped (--missing drop).
void add_row(RowReader& r, int64_t line, const std::vector<std::string>& f) {
  const std::string& path = r.src.path;
  const CsvOptions& opt = r.src.opt;
  const Header& h = r.header;
  bool drop_row = false;
  for (size_t c = 0; c < h.width(); ++c) {
    if (!r.cols.is_feature(c, h)) continue;
    const int64_t j = r.cols.source_pos[c];
    if (r.is_missing(f[c])) {
      if (opt.missing == Missing::Error)
        throw missing_error(path, h, line, f, c, r.cats.is_cat[j] ? "a category" : "a number");
      r.row[j] = std::numeric_limits<float>::quiet_NaN();  // Mean: filled once every row is read
      drop_row = drop_row || opt.missing == Missing::Drop;
    } else if (r.cats.is_cat[j]) {
      r.row[j] = static_cast<float>(category_id(r, line, c, j, std::string(trim(f[c]))));
    } else {
      r.row[j] = parse_cell(f[c], path, line, c, h.names[c]);
    }
  }
  if (h.has_label && r.is_missing(f[h.label_col])) {
    if (opt.missing != Missing::Drop)
      throw missing_error(path, h, line, f, h.label_col, opt.task == Task::Regression ? "a number" : "a class label");
    drop_row = true;
  }
  if (drop_row) {
    ++r.rows.dropped;
    return;
  }
  r.rows.raw.insert(r.rows.raw.end(), r.row.begin(), r.row.end());
  r.rows.lines.push_back(line);
  if (!h.has_label) return;
  if (opt.task == Task::Regression)
    r.rows.y.push_back(parse_cell(f[h.label_col], path, line, h.label_col, h.names[h.label_col]));
  else
    r.rows.label_text.push_back(f[h.label_col]);
}

// --categorical auto: marks categorical every column with a cell in the held rows that is neither
// missing nor a number, then adds the rows.
void add_held_rows(RowReader& r, const std::vector<std::pair<int64_t, std::vector<std::string>>>& held) {
  for (const auto& [line, f] : held)
    for (size_t c = 0; c < r.header.width(); ++c)
      if (r.cols.is_feature(c, r.header) && !r.is_missing(f[c]) && !parse_number(f[c]))
        r.cats.is_cat[r.cols.source_pos[c]] = true;
  for (const auto& [line, f] : held) add_row(r, line, f);
}

// The error for a row of the wrong number of fields.
Error field_count_error(const Source& src, const Header& h, int64_t line, size_t got) {
  const size_t width = h.width();
  return Error(at_line(src.path, line) + ": expected " + std::to_string(width) + " fields (as in " +
               (src.opt.header ? "the header, line " + std::to_string(h.header_line) : std::string("the first row")) +
               "), got " + std::to_string(got) +
               (got < width ? " (column " + std::to_string(got + 1) + " \"" + h.names[got] + "\" onward is missing)"
                            : " (an extra field at column " + std::to_string(width + 1) + ")"));
}

// Reads every row after the header (without a header row, the first row too). --categorical auto
// holds the first kSniffRows rows until each column's kind is known. No row left is an error.
Rows read_rows(Lines& lines, const Source& src, const Header& h, const Columns& cols, Categories& cats) {
  constexpr size_t kSniffRows = 1000;
  RowReader r{src, h, cols, cats, MissingCells(src.opt), {}, std::vector<float>(cols.count())};
  std::vector<std::pair<int64_t, std::vector<std::string>>> held;
  bool sniffing = src.opt.categorical_auto && !src.train;
  std::vector<std::string> fields;  // reused for every row
  int64_t line_no = h.line;
  std::optional<std::string_view> line = h.text;
  bool pending = !src.opt.header;  // without a header, the first row is data
  while (pending || (line = next_row(lines, src.opt.comment, line_no))) {
    pending = false;
    split_fields(*line, src.opt.delimiter, src.path, line_no, fields);
    if (fields.size() != h.width()) throw field_count_error(src, h, line_no, fields.size());
    if (!sniffing) {
      add_row(r, line_no, fields);
      continue;
    }
    held.emplace_back(line_no, fields);
    if (held.size() >= kSniffRows) {
      add_held_rows(r, held);
      held.clear();
      sniffing = false;
    }
  }
  if (sniffing) add_held_rows(r, held);
  const int64_t m = cols.count();
  r.rows.n = m > 0 ? static_cast<int64_t>(r.rows.raw.size()) / m : 0;
  if (r.rows.n == 0 && r.rows.dropped > 0)
    throw Error(src.path + ": every one of its " + std::to_string(r.rows.dropped) +
                " rows has a missing value (--missing drop)");
  if (r.rows.n == 0)
    throw Error(src.path + ": the header (line " + std::to_string(h.header_line) + ") has no data rows");
  return std::move(r.rows);
}

// A training file's categories in order: integers numerically if every one is an integer, else
// bytewise, as the classes; the rows' ids follow.
void sort_categories(Categories& cats, Rows& rows) {
  const int64_t m = static_cast<int64_t>(cats.is_cat.size());
  for (int64_t j = 0; j < m; ++j) {
    if (!cats.is_cat[j]) continue;
    const std::vector<std::string> sorted = in_class_order(cats.names[j]);
    std::vector<float> new_id(sorted.size());
    for (size_t k = 0; k < sorted.size(); ++k) new_id[cats.index[j].at(sorted[k])] = static_cast<float>(k);
    for (int64_t i = 0; i < rows.n; ++i)
      if (float& v = rows.raw[i * m + j]; !std::isnan(v)) v = new_id[static_cast<size_t>(v)];
    cats.names[j] = sorted;
  }
}

// The features after one-hot encoding: (n, d) row-major, with their names.
struct Features {
  std::vector<std::string> names;  // (d) a source's name, or "<column>=<category>"
  std::vector<float> x;            // (n, d)
  int64_t d = 0;
};

// The most values (rows x features after one-hot encoding) a CSV data set may hold: 2^29, 2 GiB of
// float32 (Fashion-MNIST is 60000 x 784 = 4.7e7), below what would exhaust memory once copied.
constexpr double kMaxCsvValues = double(int64_t{1} << 29);

// n rows of d features against kMaxCsvValues, before they are allocated; the error names the
// categorical column with the most categories, the one to leave out or bin.
void check_one_hot_size(const Columns& cols, const Categories& cats, int64_t n, int64_t d, const std::string& path) {
  const double values = double(n) * double(d);
  if (values <= kMaxCsvValues) return;
  int64_t widest = -1;
  for (int64_t j = 0; j < cols.count(); ++j)
    if (cats.is_cat[j] && (widest < 0 || cats.names[j].size() > cats.names[widest].size())) widest = j;
  std::ostringstream msg;
  msg << path << ": " << n << " rows x " << d << " features = " << std::setprecision(3) << values << " values ("
      << values * 4 / double(int64_t{1} << 30) << " GiB of float32), more than the " << (int64_t{1} << 29)
      << " a data set may hold here";
  if (widest >= 0) {
    const std::string& col = cols.sources[widest];
    msg << ": the categorical column \"" << col << "\" one-hot encodes into " << cats.names[widest].size()
        << " features (--categorical); leave it out (--csv-drop " << col << ") or give fewer categories";
  } else {
    msg << "; give fewer rows or columns (--csv-columns, --csv-drop)";
  }
  throw Error(msg.str());
}

// One-hot encoding: a categorical source's category k sets its k-th feature to 1, the others 0
// (a missing category: all NaN, for --missing mean); other sources are copied.
Features one_hot(const Columns& cols, const Categories& cats, const Rows& rows, const std::string& path) {
  const int64_t m = cols.count(), n = rows.n;
  Features out;
  std::vector<int64_t> offset(m);  // source j's first feature
  for (int64_t j = 0; j < m; ++j) {
    offset[j] = static_cast<int64_t>(out.names.size());
    if (!cats.is_cat[j]) out.names.push_back(cols.sources[j]);
    else
      for (const std::string& c : cats.names[j]) out.names.push_back(cols.sources[j] + "=" + c);
  }
  const int64_t d = out.d = static_cast<int64_t>(out.names.size());
  check_one_hot_size(cols, cats, n, d, path);  // before the n x d floats are allocated
  out.x.assign(static_cast<size_t>(n * d), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const float v = rows.raw[i * m + j];
      float* x = &out.x[i * d + offset[j]];
      if (!cats.is_cat[j]) *x = v;
      else if (std::isnan(v)) std::fill(x, x + cats.names[j].size(), v);
      else x[static_cast<size_t>(v)] = 1.0f;
    }
  return out;
}

// --missing mean: every missing feature (NaN) becomes its column's mean over the rows where it is
// present (train's means for a test file). Returns the means (empty without --missing mean).
std::vector<float> fill_missing(Features& f, int64_t n, const Source& src) {
  const int64_t d = f.d;
  if (src.opt.missing == Missing::Mean && src.train && static_cast<int64_t>(src.train->fill.size()) != d)
    throw Error(src.path + ": --missing mean needs the training set's column means, and \"" + src.train->name +
                "\" has none (it was read without --missing mean)");
  std::vector<float> fill;
  if (src.opt.missing != Missing::Mean) return fill;
  if (src.train) {
    fill = src.train->fill;
  } else {
    for (int64_t j = 0; j < d; ++j) {
      double sum = 0;
      int64_t count = 0;
      for (int64_t i = 0; i < n; ++i)
        if (const float v = f.x[i * d + j]; !std::isnan(v)) sum += v, ++count;
      if (count == 0)
        throw Error(src.path + ": column \"" + f.names[j] + "\" has no value in any row: its mean cannot fill "
                    "it (--csv-drop \"" + f.names[j] + "\" leaves it out)");
      fill.push_back(static_cast<float>(sum / static_cast<double>(count)));
    }
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)
      if (std::isnan(f.x[i * d + j])) f.x[i * d + j] = fill[j];
  return fill;
}

// Class mapping: train's, or integers sorted numerically if every label is one ("07" is class 7),
// else the label strings sorted bytewise. Sets ds.labels, ds.num_classes and ds.class_names.
void encode_classes(Dataset& ds, const Rows& rows, const Header& h, const Source& src) {
  const int64_t n = rows.n;
  const Dataset* train = src.train;
  std::vector<std::optional<int64_t>> as_int(n);
  bool integer = true;
  if (train)
    for (const std::string& c : train->class_names) {
      const std::optional<int64_t> v = parse_integer_class(c);
      integer = integer && v && std::to_string(*v) == c;
    }
  for (int64_t i = 0; i < n; ++i) {
    as_int[i] = parse_integer_class(rows.label_text[i]);
    if (!train) integer = integer && as_int[i].has_value();
  }
  std::vector<std::string> names;
  if (train) {
    names = train->class_names;
  } else {
    std::set<std::string> keys;
    for (int64_t i = 0; i < n; ++i) keys.insert(integer ? std::to_string(*as_int[i]) : rows.label_text[i]);
    names = in_class_order({keys.begin(), keys.end()});
  }
  std::map<std::string, int64_t> index;  // class name -> index
  for (size_t k = 0; k < names.size(); ++k) index[names[k]] = static_cast<int64_t>(k);
  ds.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const std::string key = integer && as_int[i] ? std::to_string(*as_int[i]) : rows.label_text[i];
    const auto it = index.find(key);
    if (it == index.end())
      throw Error(at_cell(src.path, rows.lines[i], h.label_col, h.names[h.label_col]) + ": class \"" +
                  rows.label_text[i] + "\" does not occur in the training set \"" + train->name +
                  "\" (its classes: " + join(names) + ")");
    ds.labels[i] = it->second;
  }
  ds.num_classes = static_cast<int64_t>(names.size());
  ds.class_names = names;
}

// The data set: the features, and the labels (classes or regression targets) if the file has them.
Dataset make_dataset(const Source& src, const Header& h, const Columns& cols, const Categories& cats,
                     const Rows& rows, const Features& f, const std::vector<float>& fill) {
  Dataset ds;
  ds.name = src.path;
  ds.label_name = src.opt.label_column;
  ds.feature_names = f.names;
  ds.x = autograd::empty({rows.n, f.d});
  std::copy(f.x.begin(), f.x.end(), ds.x.data<float>());
  ds.lines = rows.lines;
  ds.fill = fill;
  ds.dropped_rows = rows.dropped;
  if (cats.any()) {
    ds.source_columns = cols.sources;
    for (int64_t j = 0; j < cols.count(); ++j)
      if (cats.is_cat[j]) ds.categories.emplace_back(cols.sources[j], cats.names[j]);
  }
  if (!h.has_label) {  // features only (read_csv_features)
    ds.label_name.clear();
    return ds;
  }
  if (src.opt.task == Task::Regression) {
    ds.y = autograd::empty({rows.n, 1});
    std::copy(rows.y.begin(), rows.y.end(), ds.y.data<float>());
    return ds;
  }
  encode_classes(ds, rows, h, src);
  return ds;
}

// Reads the file; train (if given) fixes the feature columns and the class mapping.
Dataset read(const std::string& path, const CsvOptions& opt, const Dataset* train) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path + ": no such file");
  if (!fs::is_regular_file(path, ec)) throw Error(path + ": is not a regular file");
  if (opt.label_column.empty())
    throw Error(path + ": no label column given (expected the name of one of the header's columns)");

  const Source src{path, opt, train};
  try {
    Lines lines(path);
    const Header header = read_header(lines, src);
    const Columns cols = feature_columns(header, src);
    Categories cats = categorical_columns(header, cols, src);
    Rows rows = read_rows(lines, src, header, cols, cats);
    if (!train) sort_categories(cats, rows);
    Features features = one_hot(cols, cats, rows, path);
    const std::vector<float> fill = fill_missing(features, rows.n, src);
    return make_dataset(src, header, cols, cats, rows, features, fill);
  } catch (const io::error::base& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace

std::vector<std::string> split_csv_line(const std::string& line, char delimiter, const std::string& file,
                                        int64_t line_number) {
  std::vector<std::string> fields;
  split_fields(line, delimiter, file, line_number, fields);
  return fields;
}

Dataset read_csv(const std::string& path, const CsvOptions& options) { return read(path, options, nullptr); }

Dataset read_csv_features(const std::string& path, const CsvOptions& options, const Dataset& train) {
  CsvOptions o = options;
  o.label_optional = true;
  return read_csv(path, o, train);
}

Dataset read_csv(const std::string& path, const CsvOptions& options, const Dataset& train) {
  if (train.label_name != options.label_column)
    throw Error(path + ": label column \"" + options.label_column + "\" differs from the training set's \"" +
                train.label_name + "\"");
  if (train.is_classification() != (options.task == Task::Classification))
    throw Error(path + ": the task (" +
                std::string(options.task == Task::Classification ? "classification" : "regression") +
                ") differs from the training set's");
  if (train.feature_names.empty() || static_cast<int64_t>(train.feature_names.size()) != train.features())
    throw Error(path + ": the training set \"" + train.name + "\" has no feature column names "
                "(expected one read from a CSV file)");
  return read(path, options, &train);
}

std::string missing_name(Missing m) {
  return m == Missing::Drop ? "drop" : m == Missing::Mean ? "mean" : "error";
}

Missing missing_from_name(const std::string& name) {
  return name == "drop" ? Missing::Drop : name == "mean" ? Missing::Mean : Missing::Error;
}

}  // namespace normlab::data
