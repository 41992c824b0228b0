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

// Reads the file; train (if given) fixes the feature columns and the class mapping.
Dataset read(const std::string& path, const CsvOptions& opt, const Dataset* train) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path + ": no such file");
  if (!fs::is_regular_file(path, ec)) throw Error(path + ": is not a regular file");
  if (opt.label_column.empty())
    throw Error(path + ": no label column given (expected the name of one of the header's columns)");

  try {
    Lines lines(path);
    auto next_line = [&](int64_t& number) -> std::optional<std::string_view> {
      // Skips blank lines and comment lines; returns nullopt at the end of the file.
      while (const std::optional<std::string_view> line = lines.next(number)) {
        const std::string_view t = trim(*line);
        if (!t.empty() && !(opt.comment && t.front() == opt.comment)) return line;
      }
      return std::nullopt;
    };

    // Rows skipped at the top (e.g. scikit-learn's "150,4,setosa,versicolor,virginica" line).
    int64_t line_no = 0;
    for (int64_t k = 0; k < opt.skip_rows; ++k)
      if (!lines.next(line_no))
        throw Error(path + ": the file has " + std::to_string(line_no) + " lines, fewer than the " +
                    std::to_string(opt.skip_rows) + " to skip (--csv-skip-rows)");

    // Header (or, without one, the first row, whose fields are numbered).
    std::optional<std::string_view> line = next_line(line_no);
    if (!line)
      throw Error(path + ": the file is empty" + (opt.skip_rows ? " after the skipped rows" : "") +
                  (opt.header ? " (expected a header row with column names)" : " (expected data rows)"));
    const int64_t header_line = opt.header ? line_no : 0;
    std::vector<std::string> header = split_csv_line(std::string(*line), opt.delimiter, path, line_no);
    const bool first_is_data = !opt.header;
    if (first_is_data)
      for (size_t c = 0; c < header.size(); ++c) header[c] = std::to_string(c);
    std::vector<std::string> fields;  // reused for every row
    const size_t width = header.size();
    std::set<std::string> seen;
    bool all_numeric = true;
    for (size_t c = 0; c < width; ++c) {
      if (header[c].empty())
        throw Error(at_line(path, line_no) + ", column " + std::to_string(c + 1) +
                    ": empty column name in the header");
      if (!seen.insert(header[c]).second)
        throw Error(at_cell(path, line_no, c, header[c]) + ": duplicate column name in the header");
      all_numeric = all_numeric && parse_number(header[c]).has_value();
    }
    if (all_numeric && opt.header)
      throw Error(at_line(path, line_no) + ": no header row (every field is a number: \"" +
                  std::string(trim(*line)) + "\"); expected column names in the first row, or --csv-no-header for a file without them");
    const auto label_it = std::find(header.begin(), header.end(), opt.label_column);
    const bool has_label = label_it != header.end();
    if (!has_label && !opt.label_optional)
      throw Error(at_line(path, line_no) + ": no column \"" + opt.label_column +
                  "\" for the label in the header; the columns are: " + join(header) + layout_hint(*line, opt));
    const size_t label_col = has_label ? static_cast<size_t>(label_it - header.begin()) : width;  // width: none
    if (has_label && width < 2)
      throw Error(at_line(path, line_no) + ": the header has only the label column \"" + opt.label_column +
                  "\"; expected at least one feature column");

    // Columns left out: --csv-drop, and with --csv-columns every column it does not name (the label
    // is read either way). Each name must be a column of the header.
    std::vector<bool> unused(width, false);
    for (const auto* names : {&opt.drop, &opt.keep})
      for (const std::string& name : *names) {
        if (std::find(header.begin(), header.end(), name) == header.end())
          throw Error(at_line(path, line_no) + ": no column \"" + name + "\" to " +
                      (names == &opt.drop ? "drop (--csv-drop)" : "keep (--csv-columns)") + "; the columns are: " +
                      join(header));
        if (has_label && name == opt.label_column)
          throw Error("column \"" + name + "\" is the label (--label): it cannot be " +
                      (names == &opt.drop ? "dropped" : "a feature column"));
      }
    for (size_t c = 0; c < width; ++c)
      unused[c] = std::find(opt.drop.begin(), opt.drop.end(), header[c]) != opt.drop.end() ||
                  (!opt.keep.empty() && std::find(opt.keep.begin(), opt.keep.end(), header[c]) == opt.keep.end());

    // Feature source columns: file order, or train's order for a test file. A categorical column
    // (--categorical) becomes one 0/1 feature per category, "<column>=<category>", in its place.
    std::vector<std::string> sources;            // the feature columns, before one-hot encoding
    std::vector<int64_t> source_pos(width, -1);  // file column -> source index
    if (!train) {
      for (size_t c = 0; c < width; ++c)
        if (c != label_col && !unused[c]) source_pos[c] = static_cast<int64_t>(sources.size()),
                                          sources.push_back(header[c]);
      if (sources.empty())
        throw Error(at_line(path, line_no) + ": no feature column left (the columns are: " + join(header) + ")");
    } else {
      sources = train->source_columns.empty() ? train->feature_names : train->source_columns;
      for (size_t c = 0; c < width; ++c) {
        if (c == label_col || unused[c]) continue;
        const auto it = std::find(sources.begin(), sources.end(), header[c]);
        if (it == sources.end())
          throw Error(at_cell(path, line_no, c, header[c]) + ": not a feature column of the training set " +
                      "\"" + train->name + "\" (its features: " + join(sources) + "; --csv-drop leaves a column out)");
        source_pos[c] = it - sources.begin();
      }
      for (const std::string& f : sources)
        if (!seen.count(f))
          throw Error(at_line(path, line_no) + ": the header lacks the feature column \"" + f +
                      "\" of the training set \"" + train->name + "\"");
    }
    const int64_t m = static_cast<int64_t>(sources.size());

    // Categorical sources and their categories (a test file takes train's, in train's order).
    std::vector<bool> is_cat(m, false);
    std::vector<std::map<std::string, int64_t, std::less<>>> cat_index(m);  // category -> id
    std::vector<std::vector<std::string>> cat_names(m);                     // id -> category
    if (train) {
      for (const auto& [col, cats] : train->categories) {
        const int64_t j = std::find(sources.begin(), sources.end(), col) - sources.begin();
        if (j == m) throw Error(path + ": the training set's categorical column \"" + col + "\" is not a feature column");
        is_cat[j] = true, cat_names[j] = cats;
        for (size_t k = 0; k < cats.size(); ++k) cat_index[j][cats[k]] = static_cast<int64_t>(k);
      }
    } else {
      for (const std::string& name : opt.categorical) {
        const auto it = std::find(sources.begin(), sources.end(), name);
        if (it == sources.end())
          throw Error(at_line(path, line_no) + ": no feature column \"" + name + "\" to one-hot encode (--categorical)" +
                      (has_label && name == opt.label_column ? ": it is the label" : "") +
                      "; the feature columns are: " + join(sources));
        is_cat[it - sources.begin()] = true;
      }
    }

    // Missing cells: empty, or one of the NA strings (trimmed).
    std::set<std::string, std::less<>> na(kDefaultNaValues.begin(), kDefaultNaValues.end());
    na.insert(opt.na_values.begin(), opt.na_values.end());
    const auto is_missing = [&](const std::string& cell) {
      const std::string_view t = trim(cell);
      return t.empty() || na.count(t) > 0;
    };
    const auto missing_error = [&](int64_t ln, const std::vector<std::string>& f, size_t c, const std::string& what) {
      return Error(at_cell(path, ln, c, header[c]) + ": a missing value (" +
                   (trim(f[c]).empty() ? std::string("an empty cell") : "\"" + f[c] + "\"") + "); expected " +
                   what + (c == label_col ? "; --missing drop leaves such rows out"
                                          : "; --missing drop leaves such rows out, --missing mean fills in the "
                                            "column's mean"));
    };
    int64_t dropped = 0;

    // One row: each source as a float (a category's id for a categorical column, NaN when missing).
    std::vector<float> raw, y;
    std::vector<std::string> label_text;
    std::vector<int64_t> label_line;  // the file line of each row
    std::vector<float> row(m);
    const auto process = [&](int64_t ln, const std::vector<std::string>& f) {
      bool drop_row = false;
      for (size_t c = 0; c < width; ++c) {
        if (c == label_col || unused[c]) continue;
        const int64_t j = source_pos[c];
        if (is_missing(f[c])) {
          if (opt.missing == Missing::Error) throw missing_error(ln, f, c, is_cat[j] ? "a category" : "a number");
          row[j] = std::numeric_limits<float>::quiet_NaN();  // Mean: filled below
          drop_row = drop_row || opt.missing == Missing::Drop;
        } else if (is_cat[j]) {
          const std::string v(trim(f[c]));
          auto it = cat_index[j].find(v);
          if (it == cat_index[j].end()) {
            if (train)
              throw Error(at_cell(path, ln, c, header[c]) + ": category \"" + v + "\" does not occur in the training set \"" +
                          train->name + "\" (its categories: " + join(cat_names[j]) + ")");
            if (cat_names[j].size() >= (size_t{1} << 24))
              throw Error(at_cell(path, ln, c, header[c]) + ": more than 2^24 categories");
            it = cat_index[j].emplace(v, static_cast<int64_t>(cat_names[j].size())).first;
            cat_names[j].push_back(v);
          }
          row[j] = static_cast<float>(it->second);
        } else {
          row[j] = parse_cell(f[c], path, ln, c, header[c]);
        }
      }
      if (has_label && is_missing(f[label_col])) {
        if (opt.missing != Missing::Drop)
          throw missing_error(ln, f, label_col, opt.task == Task::Regression ? "a number" : "a class label");
        drop_row = true;
      }
      if (drop_row) {
        ++dropped;
        return;
      }
      raw.insert(raw.end(), row.begin(), row.end());
      label_line.push_back(ln);
      if (!has_label) return;
      if (opt.task == Task::Regression)
        y.push_back(parse_cell(f[label_col], path, ln, label_col, header[label_col]));
      else
        label_text.push_back(f[label_col]);
    };

    // --categorical auto: the first rows are held until each column's kind is known: categorical
    // when one of its cells there is neither missing nor a number.
    constexpr size_t kSniffRows = 1000;
    std::vector<std::pair<int64_t, std::vector<std::string>>> head;
    bool sniffing = opt.categorical_auto && !train;
    const auto flush_head = [&] {
      for (const auto& [ln, f] : head)
        for (size_t c = 0; c < width; ++c)
          if (c != label_col && !unused[c] && !is_missing(f[c]) && !parse_number(f[c])) is_cat[source_pos[c]] = true;
      for (const auto& [ln, f] : head) process(ln, f);
      head.clear();
      sniffing = false;
    };
    bool pending = first_is_data;  // without a header, the first row read above is data
    while (pending || (line = next_line(line_no))) {
      pending = false;
      split_fields(*line, opt.delimiter, path, line_no, fields);
      if (fields.size() != width)
        throw Error(at_line(path, line_no) + ": expected " + std::to_string(width) +
                    " fields (as in " + (opt.header ? "the header, line " + std::to_string(header_line) : std::string("the first row")) + "), got " +
                    std::to_string(fields.size()) +
                    (fields.size() < width
                         ? " (column " + std::to_string(fields.size() + 1) + " \"" + header[fields.size()] +
                               "\" onward is missing)"
                         : " (an extra field at column " + std::to_string(width + 1) + ")"));
      if (!sniffing) {
        process(line_no, fields);
        continue;
      }
      head.emplace_back(line_no, fields);
      if (head.size() >= kSniffRows) flush_head();
    }
    if (sniffing) flush_head();
    const int64_t n = m > 0 ? static_cast<int64_t>(raw.size()) / m : 0;
    if (n == 0 && dropped > 0)
      throw Error(path + ": every one of its " + std::to_string(dropped) + " rows has a missing value (--missing drop)");
    if (n == 0) throw Error(path + ": the header (line " + std::to_string(header_line) + ") has no data rows");

    // Categories in order (a training file): integers numerically if every one is an integer, else
    // bytewise, as the classes; the rows' ids follow.
    if (!train)
      for (int64_t j = 0; j < m; ++j) {
        if (!is_cat[j]) continue;
        const std::vector<std::string> sorted = in_class_order(cat_names[j]);
        std::vector<float> new_id(sorted.size());
        for (size_t k = 0; k < sorted.size(); ++k) new_id[cat_index[j].at(sorted[k])] = static_cast<float>(k);
        for (int64_t i = 0; i < n; ++i)
          if (float& v = raw[i * m + j]; !std::isnan(v)) v = new_id[static_cast<size_t>(v)];
        cat_names[j] = sorted;
      }

    // One-hot encoding: a categorical source's category k sets its k-th feature to 1, the others 0
    // (a missing category: all NaN, for --missing mean).
    std::vector<std::string> feature_names;
    std::vector<int64_t> offset(m);
    for (int64_t j = 0; j < m; ++j) {
      offset[j] = static_cast<int64_t>(feature_names.size());
      if (!is_cat[j]) feature_names.push_back(sources[j]);
      else
        for (const std::string& c : cat_names[j]) feature_names.push_back(sources[j] + "=" + c);
    }
    const int64_t d = static_cast<int64_t>(feature_names.size());
    std::vector<float> x(static_cast<size_t>(n * d), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const float v = raw[i * m + j];
        float* out = &x[i * d + offset[j]];
        if (!is_cat[j]) *out = v;
        else if (std::isnan(v)) std::fill(out, out + cat_names[j].size(), v);
        else out[static_cast<size_t>(v)] = 1.0f;
      }
    if (opt.missing == Missing::Mean && train && static_cast<int64_t>(train->fill.size()) != d)
      throw Error(path + ": --missing mean needs the training set's column means, and \"" + train->name +
                  "\" has none (it was read without --missing mean)");

    // --missing mean: each feature's mean over the rows where it is present (train's for a test file).
    std::vector<float> fill;
    if (opt.missing == Missing::Mean) {
      if (train) {
        fill = train->fill;
      } else {
        for (int64_t j = 0; j < d; ++j) {
          double sum = 0;
          int64_t count = 0;
          for (int64_t i = 0; i < n; ++i)
            if (const float v = x[i * d + j]; !std::isnan(v)) sum += v, ++count;
          if (count == 0)
            throw Error(path + ": column \"" + feature_names[j] + "\" has no value in any row: its mean cannot fill "
                        "it (--csv-drop \"" + feature_names[j] + "\" leaves it out)");
          fill.push_back(static_cast<float>(sum / static_cast<double>(count)));
        }
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < d; ++j)
          if (std::isnan(x[i * d + j])) x[i * d + j] = fill[j];
    }

    Dataset ds;
    ds.name = path;
    ds.label_name = opt.label_column;
    ds.feature_names = feature_names;
    ds.x = autograd::empty({n, d});
    std::copy(x.begin(), x.end(), ds.x.data<float>());
    ds.lines = label_line;
    ds.fill = fill;
    ds.dropped_rows = dropped;
    if (std::find(is_cat.begin(), is_cat.end(), true) != is_cat.end()) {
      ds.source_columns = sources;
      for (int64_t j = 0; j < m; ++j)
        if (is_cat[j]) ds.categories.emplace_back(sources[j], cat_names[j]);
    }
    if (!has_label) {  // features only (read_csv_features)
      ds.label_name.clear();
      return ds;
    }
    if (opt.task == Task::Regression) {
      ds.y = autograd::empty({n, 1});
      std::copy(y.begin(), y.end(), ds.y.data<float>());
      return ds;
    }

    // Class mapping: train's, or integers sorted numerically if every label is one, else strings
    // sorted bytewise.
    const auto cell = [&](int64_t i) { return at_cell(path, label_line[i], label_col, header[label_col]); };
    std::vector<std::optional<int64_t>> as_int(n);
    bool integer = true;
    if (train) {
      for (const std::string& c : train->class_names) {
        const std::optional<int64_t> v = parse_integer_class(c);
        integer = integer && v && std::to_string(*v) == c;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      as_int[i] = parse_integer_class(label_text[i]);
      if (!train) integer = integer && as_int[i].has_value();
    }
    std::map<std::string, int64_t> index;  // class name -> index
    std::vector<std::string> names;
    if (train) {
      names = train->class_names;
    } else {  // integer labels by their value ("07" is class 7)
      std::set<std::string> keys;
      for (int64_t i = 0; i < n; ++i) keys.insert(integer ? std::to_string(*as_int[i]) : label_text[i]);
      names = in_class_order({keys.begin(), keys.end()});
    }
    for (size_t k = 0; k < names.size(); ++k) index[names[k]] = static_cast<int64_t>(k);
    ds.labels.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      const std::string key = integer && as_int[i] ? std::to_string(*as_int[i]) : label_text[i];
      const auto it = index.find(key);
      if (it == index.end())
        throw Error(cell(i) + ": class \"" + label_text[i] + "\" does not occur in the training set \"" +
                    train->name + "\" (its classes: " + join(names) + ")");
      ds.labels[i] = it->second;
    }
    ds.num_classes = static_cast<int64_t>(names.size());
    ds.class_names = names;
    return ds;
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

}  // namespace normlab::data
