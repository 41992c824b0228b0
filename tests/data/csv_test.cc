// CSV reader: fixture files (valid and malformed); values, class mappings and every error's file, line and column.
#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <filesystem>

#include "data/csv.h"
#include "data/split.h"
#include "tests/data/support.h"
#include "tests/support/compare.h"
#include "tests/support/files.h"

using namespace normlab::data;
using normlab::test::check_mentions;
using normlab::test::check_tensor;
using normlab::test::error_of;
using normlab::test::fixture;
using normlab::test::read_file;
using normlab::test::TempDir;
using normlab::test::write_file;

namespace {

CsvOptions classify(const std::string& label) { return CsvOptions{label, Task::Classification, ','}; }

// The error message of reading fixture `name` with this label column (classification).
std::string read_error(const std::string& name, const std::string& label = "label") {
  return error_of([&] { read_csv(fixture(name), classify(label)); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(csv)

BOOST_AUTO_TEST_CASE(string_classes_quotes_spaces_and_blank_lines) {
  Dataset ds = read_csv(fixture("classes.csv"), classify("species"));
  BOOST_TEST(ds.size() == 4);
  BOOST_TEST(ds.feature_names == (std::vector<std::string>{"sepal_length", "sepal_width", "petal_length"}));
  check_tensor(ds.x, {5.1, 3.5, 1.4, 7.0, 3.2, 4.7, 6.3, 3.3, 6.0, 4.9, 3.0, 1.4});
  // Sorted bytewise: "setosa" < "versicolor, big" < "virginica".
  BOOST_TEST(ds.class_names == (std::vector<std::string>{"setosa", "versicolor, big", "virginica"}));
  BOOST_TEST(ds.labels == (std::vector<int64_t>{0, 1, 2, 0}));
  BOOST_TEST(ds.num_classes == 3);
  BOOST_TEST(ds.label_name == "species");
  BOOST_TEST(!ds.y.defined());
  BOOST_TEST(ds.lines == (std::vector<int64_t>{2, 4, 5, 6}));  // line 3 is blank
  BOOST_TEST(ds.subset({3, 0}).lines == (std::vector<int64_t>{6, 2}));
}

BOOST_AUTO_TEST_CASE(test_split_uses_train_classes_and_feature_order) {
  Dataset train = read_csv(fixture("classes.csv"), classify("species"));
  Dataset test = read_csv(fixture("classes_test.csv"), classify("species"), train);
  // classes_test.csv has its columns in another order: petal_length, species, sepal_width, sepal_length.
  check_tensor(test.x, {5.0, 3.0, 1.5, 6.1, 2.9, 4.5});
  BOOST_TEST(test.labels == (std::vector<int64_t>{2, 1}));
  BOOST_TEST(test.class_names == train.class_names);
  BOOST_TEST(test.num_classes == 3);
}

BOOST_AUTO_TEST_CASE(class_seen_only_in_the_test_split_is_an_error) {
  Dataset train = read_csv(fixture("classes.csv"), classify("species"));
  const std::string path = fixture("classes_test_unknown.csv");
  check_mentions(error_of([&] { read_csv(path, classify("species"), train); }),
                 {path, "line 3", "column 3", "\"species\"", "\"iris-unknown\"", "\"setosa\", \"versicolor, big\", \"virginica\""});
  const std::string extra = fixture("classes_test_extra_column.csv");
  check_mentions(error_of([&] { read_csv(extra, classify("species"), train); }),
                 {extra, "line 1", "column 5", "\"petal_width\"", "not a feature column"});
  check_mentions(error_of([&] { read_csv(fixture("classes_test.csv"), classify("sepal_width"), train); }),
                 {"label column \"sepal_width\"", "\"species\""});
}

BOOST_AUTO_TEST_CASE(class_held_out_by_a_split_of_one_file_is_an_error) {
  // rare_class.csv: classes a and b, and "rare" only on line 11 (of 12).
  const std::string path = fixture("rare_class.csv");
  const Dataset ds = read_csv(path, classify("label"));
  BOOST_TEST(ds.class_names == (std::vector<std::string>{"a", "b", "rare"}));
  // In file order, the last 3 rows (lines 10-12) are the test part: "rare" is never trained on.
  check_mentions(error_of([&] { check_classes_in_train(split_counts(ds, 0, 3, 0, false)); }),
                 {path, "line 11", "class \"rare\"", "test part", "not in its training part"});
  check_mentions(error_of([&] { check_classes_in_train(split_counts(ds, 2, 0, 0, false)); }),
                 {path, "line 11", "class \"rare\"", "validation part"});
  // Held out classes that also occur in the training part pass.
  BOOST_CHECK_NO_THROW(check_classes_in_train(split_counts(ds, 0, 1, 0, false)));
  BOOST_CHECK_NO_THROW(check_classes_in_train(split_counts(ds, 0, 0, 0, false)));
}

BOOST_AUTO_TEST_CASE(integer_classes_sort_numerically) {
  Dataset ds = read_csv(fixture("int_classes.csv"), classify("label"));
  // Labels 10, 2, 3, 2.0 -> classes 2, 3, 10 (numeric order, not "10" < "2").
  BOOST_TEST(ds.class_names == (std::vector<std::string>{"2", "3", "10"}));
  BOOST_TEST(ds.labels == (std::vector<int64_t>{2, 0, 1, 0}));
  check_tensor(ds.x, {1, 2, 3, 4, 5, 6, 7, 8});
  // The test file writes 03 and 10.0 for classes 3 and 10, with the label column first.
  Dataset test = read_csv(fixture("int_classes_test.csv"), classify("label"), ds);
  BOOST_TEST(test.labels == (std::vector<int64_t>{1, 2}));
  check_tensor(test.x, {0, 0, 1, 1});
}

BOOST_AUTO_TEST_CASE(regression_targets) {
  Dataset ds = read_csv(fixture("regression.csv"), CsvOptions{"target", Task::Regression, ','});
  BOOST_TEST(!ds.is_classification());
  BOOST_TEST(ds.labels.empty());
  BOOST_TEST(ds.y.shape() == (normlab::autograd::Shape{2, 1}));
  check_tensor(ds.y, {2.5, -3});
  check_tensor(ds.x, {0.5, -0.001, 1.5, 2});
  BOOST_CHECK_NO_THROW(ds.validate());
  Dataset again = read_csv(fixture("regression.csv"), CsvOptions{"target", Task::Regression, ','}, ds);
  check_tensor(again.y, {2.5, -3});
  check_mentions(error_of([&] { read_csv(fixture("classes.csv"), CsvOptions{"species", Task::Regression, ','}); }),
                 {"line 2", "column 3", "\"species\"", "\"setosa\""});
}

BOOST_AUTO_TEST_CASE(byte_order_mark_and_crlf_line_ends) {
  Dataset ds = read_csv(fixture("bom_crlf.csv"), classify("label"));
  BOOST_TEST(ds.feature_names == (std::vector<std::string>{"f1", "f2"}));
  BOOST_TEST(ds.class_names == (std::vector<std::string>{"a", "b"}));
  check_tensor(ds.x, {1, 2, 3, 4});
}

// Files up to 1 MiB are read whole, larger ones stream through the CSV library's LineReader: the
// same text gives the same rows, classes and line numbers either way (BOM, CRLF, blank lines, a
// last line without a line break), and errors name the same line.
BOOST_AUTO_TEST_CASE(small_and_large_files_read_alike) {
  namespace fs = std::filesystem;
  TempDir dir;
  // rows lines of "i,-i/4,class", a blank line every 1000 rows.
  const auto text = [](int rows, const std::string& last) {
    std::string t = "\xEF\xBB\xBFx, y ,label\r\n";
    for (int i = 0; i < rows; ++i) {
      t += std::to_string(i) + "," + std::to_string(-i / 4.0) + ",c" + std::to_string(i % 3) + "\r\n";
      if (i % 1000 == 999) t += "\r\n";
    }
    return t + last;
  };
  const auto write = [&](const std::string& name, const std::string& t) {
    write_file(dir.file(name), t);
    return dir.file(name);
  };
  const int big_rows = 60000;
  const std::string big = write("big.csv", text(big_rows, "7,8,c2"));
  const std::string small = write("small.csv", text(3000, "7,8,c2"));
  BOOST_REQUIRE(fs::file_size(big) > (1u << 20));
  BOOST_REQUIRE(fs::file_size(small) < (1u << 20));
  const Dataset b = read_csv(big, classify("label"));
  const Dataset s = read_csv(small, classify("label"));
  BOOST_TEST(b.size() == big_rows + 1);
  BOOST_TEST(s.size() == 3001);
  BOOST_TEST(b.class_names == s.class_names);
  BOOST_TEST(b.class_names == (std::vector<std::string>{"c0", "c1", "c2"}));
  for (const Dataset* d : {&b, &s}) {
    const int64_t n = d->size();
    const float* x = d->x.data<float>();
    BOOST_TEST(x[2 * 1001] == 1001.0f);
    BOOST_TEST(x[2 * 1001 + 1] == -250.25f);
    BOOST_TEST(d->labels[1001] == 2);
    BOOST_TEST(d->lines[0] == 2);
    BOOST_TEST(d->lines[1000] == 1003);  // after the blank line 1002
    BOOST_TEST(x[2 * (n - 1)] == 7.0f);  // the last line has no line break
    BOOST_TEST(d->lines[n - 1] == 2 + (n - 1) + (n - 1) / 1000);
  }
  // An error on the last line names it in both.
  const std::string big_bad = write("big_bad.csv", text(big_rows, "7,oops,c2"));
  const std::string small_bad = write("small_bad.csv", text(3000, "7,oops,c2"));
  check_mentions(error_of([&] { read_csv(big_bad, classify("label")); }),
                 {big_bad, "line " + std::to_string(2 + big_rows + big_rows / 1000), "\"y\"", "oops"});
  check_mentions(error_of([&] { read_csv(small_bad, classify("label")); }),
                 {small_bad, "line " + std::to_string(2 + 3000 + 3), "\"y\"", "oops"});
}

BOOST_AUTO_TEST_CASE(missing_empty_and_header_only_files) {
  const std::string missing = fixture("no_such_file.csv");
  check_mentions(read_error("no_such_file.csv"), {missing, "no such file"});
  check_mentions(read_error("empty.csv"), {fixture("empty.csv"), "empty", "header"});
  check_mentions(read_error("blank_lines.csv"), {fixture("blank_lines.csv"), "empty"});
  check_mentions(read_error("header_only.csv"), {fixture("header_only.csv"), "line 1", "no data rows"});
  check_mentions(error_of([&] { read_csv(NORMLAB_SOURCE_DIR, classify("label")); }), {"not a regular file"});
}

BOOST_AUTO_TEST_CASE(header_problems) {
  check_mentions(read_error("no_header.csv"), {fixture("no_header.csv"), "line 1", "no header row", "1,2,3"});
  check_mentions(read_error("duplicate_column.csv"), {fixture("duplicate_column.csv"), "line 1", "column 3", "\"a\"",
                                                      "duplicate"});
  check_mentions(read_error("classes.csv", "class"),
                 {fixture("classes.csv"), "line 1", "no column \"class\"", "\"sepal_length\", \"sepal_width\", \"species\", \"petal_length\""});
  check_mentions(read_error("only_label.csv"), {fixture("only_label.csv"), "line 1", "at least one feature column"});
  check_mentions(read_error("classes.csv", ""), {fixture("classes.csv"), "no label column given"});
}

BOOST_AUTO_TEST_CASE(ragged_rows) {
  check_mentions(read_error("ragged.csv"), {fixture("ragged.csv"), "line 3", "expected 3 fields", "got 2",
                                            "column 3 \"label\""});
  check_mentions(read_error("ragged_extra.csv"), {fixture("ragged_extra.csv"), "line 3", "got 4", "column 4"});
}

BOOST_AUTO_TEST_CASE(bad_cells) {
  check_mentions(read_error("non_numeric.csv"), {fixture("non_numeric.csv"), "line 3", "column 2", "\"b\"", "\"abc\""});
  check_mentions(read_error("nan_cell.csv"), {fixture("nan_cell.csv"), "line 2", "column 2", "missing value", "\"nan\"",
                                              "--missing"});
  check_mentions(read_error("huge_value.csv"), {fixture("huge_value.csv"), "line 2", "column 2", "float32 range"});
  // The Fast C++ CSV Parser would read this empty cell as 0; we refuse it.
  check_mentions(read_error("empty_cell.csv"), {fixture("empty_cell.csv"), "line 3", "column 2", "\"b\"", "empty cell"});
  check_mentions(read_error("empty_label.csv"), {fixture("empty_label.csv"), "line 3", "column 3", "\"label\"",
                                                 "empty cell"});
  check_mentions(read_error("unterminated_quote.csv"),
                 {fixture("unterminated_quote.csv"), "line 2", "column 3", "not closed"});
}

BOOST_AUTO_TEST_CASE(split_line_quotes_and_trimming) {
  using V = std::vector<std::string>;
  BOOST_TEST(split_csv_line(" a , \"b, c\" ,\"say \"\"hi\"\"\",", ',', "f", 1) == (V{"a", "b, c", "say \"hi\"", ""}));
  BOOST_TEST(split_csv_line("x;y", ';', "f", 1) == (V{"x", "y"}));
  BOOST_TEST(split_csv_line("", ',', "f", 1) == (V{""}));
  check_mentions(error_of([] { split_csv_line("1,\"a\"b", ',', "f.csv", 7); }),
                 {"f.csv", "line 7", "column 2", "after the closing quote"});
}

namespace {

// A file named `name` with this content (gzip-compressed if asked), in a temporary directory of
// its own that is removed at the end of the test.
struct TempFile {
  TempDir dir;
  std::string path;
  explicit TempFile(const std::string& name, const std::string& content, bool gzip = false) : path(dir.file(name)) {
    if (gzip) {
      gzFile gz = gzopen(path.c_str(), "wb");
      BOOST_REQUIRE(gz);
      BOOST_REQUIRE(gzwrite(gz, content.data(), static_cast<unsigned>(content.size())) == static_cast<int>(content.size()));
      gzclose(gz);
    } else {
      write_file(path, content);
    }
  }
};

const std::string kRows = "5.1,3.5,setosa\n7.0,3.2,versicolor\n6.3,3.3,virginica\n4.9,3.0,setosa\n";

void check_iris_rows(const Dataset& ds) {
  BOOST_TEST(ds.size() == 4);
  check_tensor(ds.x, {5.1, 3.5, 7.0, 3.2, 6.3, 3.3, 4.9, 3.0});
  BOOST_TEST(ds.class_names == (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  BOOST_TEST(ds.labels == (std::vector<int64_t>{0, 1, 2, 0}));
}

}  // namespace

BOOST_AUTO_TEST_CASE(layouts_of_real_files) {
  // scikit-learn's datasets: a "<rows>,<features>,<class names>" line, then rows without a header.
  {
    TempFile f("sklearn.csv", "4,2,setosa,versicolor,virginica\n" + kRows);
    CsvOptions o = classify("2");
    o.header = false, o.skip_rows = 1;
    const Dataset ds = read_csv(f.path, o);
    check_iris_rows(ds);
    BOOST_TEST(ds.feature_names == (std::vector<std::string>{"0", "1"}));
    BOOST_TEST(ds.lines == (std::vector<int64_t>{2, 3, 4, 5}));
  }
  // Semicolons, comment lines before the header and among the rows.
  {
    std::string text = "# measured in cm\na;b;label\n";
    for (char c : kRows) text += c == ',' ? ';' : c;
    text.insert(text.find("7.0"), "  # one more comment\n");
    TempFile f("semicolons.csv", text);
    CsvOptions o = classify("label");
    o.delimiter = ';', o.comment = '#';
    check_iris_rows(read_csv(f.path, o));
    // Without the options, hints: the comment, then the separator.
    check_mentions(error_of([&] { read_csv(f.path, classify("label")); }), {"line 1", "--csv-comment '#'"});
    CsvOptions c = classify("label");
    c.comment = '#';
    check_mentions(error_of([&] { read_csv(f.path, c); }), {"line 2", "--csv-sep ';'"});
  }
  // Tabs.
  {
    std::string text = "a\tb\tlabel\n";
    for (char c : kRows) text += c == ',' ? '\t' : c;
    TempFile f("tabs.tsv", text);
    CsvOptions o = classify("label");
    o.delimiter = '\t';
    check_iris_rows(read_csv(f.path, o));
    check_mentions(error_of([&] { read_csv(f.path, classify("label")); }), {"--csv-sep tab"});
  }
  // gzip, recognized by its magic bytes whatever the name; a file cut short is an error.
  {
    TempFile f("iris.csv.gz", "a,b,label\n" + kRows, true);
    check_iris_rows(read_csv(f.path, classify("label")));
    const std::string bytes = read_file(f.path);
    TempFile cut("cut.gz", bytes.substr(0, bytes.size() - 12));
    check_mentions(error_of([&] { read_csv(cut.path, classify("label")); }), {"cut.gz", "truncated gzip file"});
  }
  // scikit-learn's frames written with their index last (a trailing id column), left out.
  {
    TempFile f("trailing_id.csv", "a,b,label,id\n5.1,3.5,setosa,0\n7.0,3.2,versicolor,1\n6.3,3.3,virginica,2\n"
                                  "4.9,3.0,setosa,3\n");
    CsvOptions o = classify("label");
    o.drop = {"id"};
    check_iris_rows(read_csv(f.path, o));
  }
  // An id and a date column left out (--csv-drop), or only the named features kept (--csv-columns).
  {
    TempFile f("ids.csv", "id,a,date,b,label\n1,5.1,2020-01-01,3.5,setosa\n2,7.0,2020-01-02,3.2,versicolor\n"
                          "3,6.3,2020-01-03,3.3,virginica\n4,4.9,2020-01-04,3.0,setosa\n");
    CsvOptions o = classify("label");
    o.drop = {"id", "date"};
    check_iris_rows(read_csv(f.path, o));
    CsvOptions k = classify("label");
    k.keep = {"a", "b"};
    const Dataset kept = read_csv(f.path, k);
    check_iris_rows(kept);
    BOOST_TEST(kept.feature_names == (std::vector<std::string>{"a", "b"}));
    check_mentions(error_of([&] { read_csv(f.path, classify("label")); }), {"column 3", "\"date\"", "2020-01-01", "--csv-drop \"date\""});
    CsvOptions bad = classify("label");
    bad.drop = {"nope"};
    check_mentions(error_of([&] { read_csv(f.path, bad); }), {"no column \"nope\" to drop (--csv-drop)", "\"id\""});
    bad.drop = {"label"};
    check_mentions(error_of([&] { read_csv(f.path, bad); }), {"is the label", "cannot be dropped"});
    bad.drop = {"id", "a", "date", "b"};
    check_mentions(error_of([&] { read_csv(f.path, bad); }), {"no feature column left"});
  }
  // More rows to skip than the file has; no header asked of an empty file.
  {
    TempFile f("short.csv", "a,b,label\n5.1,3.5,setosa\n");
    CsvOptions o = classify("label");
    o.skip_rows = 5;
    check_mentions(error_of([&] { read_csv(f.path, o); }), {"fewer than the 5 to skip", "--csv-skip-rows"});
  }
}

BOOST_AUTO_TEST_CASE(missing_values_error_drop_or_mean) {
  // Row 3 misses b (empty), row 4 misses a ("NA"), row 5 misses a ("?", an NA string only with
  // na_values), row 6 misses its label.
  TempFile f("missing.csv", "a,b,label\n1,10,x\n2,,y\nNA,30,x\n?,40,y\n5,50,\n6,60,y\n");
  CsvOptions o = classify("label");
  o.na_values = {"?"};
  check_mentions(error_of([&] { read_csv(f.path, o); }),
                 {"line 3", "column 2", "\"b\"", "a missing value (an empty cell)", "--missing drop", "--missing mean"});
  check_mentions(error_of([&] { read_csv(f.path, classify("label")); }), {"line 3"});
  // Without "?" as an NA string the cell is not a number.
  CsvOptions plain = classify("label");
  plain.missing = Missing::Drop;
  check_mentions(error_of([&] { read_csv(f.path, plain); }), {"line 5", "column 1", "\"?\"", "finite number"});
  // drop: rows 3, 4, 5 and 6 are left out.
  o.missing = Missing::Drop;
  const Dataset dropped = read_csv(f.path, o);
  BOOST_TEST(dropped.size() == 2);
  BOOST_TEST(dropped.dropped_rows == 4);
  BOOST_TEST(dropped.lines == (std::vector<int64_t>{2, 7}));
  check_tensor(dropped.x, {1, 10, 6, 60});
  BOOST_TEST(dropped.fill.empty());
  // mean: a missing feature becomes its column's mean over the rows that have it; a missing label
  // is still an error.
  o.missing = Missing::Mean;
  check_mentions(error_of([&] { read_csv(f.path, o); }), {"line 6", "column 3", "\"label\"", "expected a class label",
                                                       "--missing drop"});
  TempFile g("missing_features.csv", "a,b,label\n1,10,x\n2,,y\nNA,30,x\n?,40,y\n6,60,y\n");
  const Dataset filled = read_csv(g.path, o);
  BOOST_TEST(filled.size() == 5);
  const float mean_a = (1 + 2 + 6) / 3.0f, mean_b = (10 + 30 + 40 + 60) / 4.0f;
  BOOST_TEST(filled.fill == (std::vector<float>{mean_a, mean_b}));
  check_tensor(filled.x, {1, 10, 2, mean_b, mean_a, 30, mean_a, 40, 6, 60});
  // A test file takes the training file's means, in the training file's column order.
  TempFile t("missing_test.csv", "b,a,label\n,7,x\n20,null,y\n");
  const Dataset test = read_csv(t.path, o, filled);
  check_tensor(test.x, {7, mean_b, mean_a, 20});
  // ... which a training set read without --missing mean does not have.
  CsvOptions err = classify("label");
  err.na_values = {"?"};
  err.missing = Missing::Drop;
  const Dataset no_fill = read_csv(g.path, err);
  check_mentions(error_of([&] { read_csv(t.path, o, no_fill); }), {"--missing mean", "has none"});
  // A column with no value at all, and a file whose every row has a missing value.
  TempFile empty_col("empty_col.csv", "a,b,label\n1,,x\n2,NA,y\n");
  check_mentions(error_of([&] { read_csv(empty_col.path, o); }), {"column \"b\" has no value in any row", "--csv-drop"});
  o.missing = Missing::Drop;
  check_mentions(error_of([&] { read_csv(empty_col.path, o); }), {"every one of its 2 rows has a missing value"});
}

// 50,000 distinct strings under --categorical: 50,000 x 50,001 one-hot values (9.3 GiB) are
// refused before they are allocated, naming the column; before the check, this ran out of memory.
BOOST_AUTO_TEST_CASE(a_one_hot_encoding_too_large_is_refused_before_allocating) {
  std::string text = "x,city,y\n";
  for (int i = 0; i < 50000; ++i) text += std::to_string(i % 7) + ",c" + std::to_string(i) + "," + std::to_string(i % 2) + "\n";
  TempFile f("many_cities.csv", text);
  CsvOptions o = classify("y");
  o.categorical = {"city"};
  check_mentions(error_of([&] { read_csv(f.path, o); }),
                 {"50000 rows x 50001 features = 2.5e+09 values (9.31 GiB of float32)", "more than the 536870912",
                  "the categorical column \"city\" one-hot encodes into 50000 features", "--csv-drop city"});
  o.categorical.clear();
  o.categorical_auto = true;  // auto finds the same column
  check_mentions(error_of([&] { read_csv(f.path, o); }), {"\"city\" one-hot encodes into 50000 features"});
  // 46 categories in 50 rows fit.
  std::string small = "x,city,y\n";
  for (int i = 0; i < 50; ++i) small += "1,c" + std::to_string(i % 46) + "," + std::to_string(i % 2) + "\n";
  TempFile g("few_cities.csv", small);
  BOOST_TEST(read_csv(g.path, o).features() == 47);
}

BOOST_AUTO_TEST_CASE(categorical_columns_are_one_hot_encoded) {
  // city: strings (bytewise order); zip: integers named explicitly (numeric order, 6000 < 69002).
  TempFile f("cities.csv", "city,rooms,zip,label\nParis,3,75001,a\nLyon,2,69002,b\nNice,5,6000,a\nParis,1,69002,b\n");
  CsvOptions o = classify("label");
  o.categorical = {"city", "zip"};
  const Dataset d = read_csv(f.path, o);
  BOOST_TEST(d.feature_names == (std::vector<std::string>{"city=Lyon", "city=Nice", "city=Paris", "rooms", "zip=6000",
                                                          "zip=69002", "zip=75001"}));
  check_tensor(d.x, {0, 0, 1, 3, 0, 0, 1,  //
                     1, 0, 0, 2, 0, 1, 0,  //
                     0, 1, 0, 5, 1, 0, 0,  //
                     0, 0, 1, 1, 0, 1, 0});
  BOOST_TEST(d.source_columns == (std::vector<std::string>{"city", "rooms", "zip"}));
  BOOST_TEST(d.categories.size() == 2);
  BOOST_TEST(d.categories[1].first == "zip");
  // auto: city has strings, zip is numbers: only city is categorical.
  CsvOptions a = classify("label");
  a.categorical_auto = true;
  BOOST_TEST(read_csv(f.path, a).feature_names ==
             (std::vector<std::string>{"city=Lyon", "city=Nice", "city=Paris", "rooms", "zip"}));
  // A test file: train's categories and order, whatever order they appear in; an unseen one is an error.
  TempFile t("cities_test.csv", "zip,label,rooms,city\n6000,a,4,Nice\n75001,b,2,Lyon\n");
  check_tensor(read_csv(t.path, o, d).x, {0, 1, 0, 4, 1, 0, 0,  //
                                         1, 0, 0, 2, 0, 0, 1});
  TempFile u("cities_unseen.csv", "city,rooms,zip,label\nRome,3,75001,a\n");
  check_mentions(error_of([&] { read_csv(u.path, o, d); }),
                 {"line 2", "column 1", "\"city\"", "category \"Rome\" does not occur", "\"Lyon\", \"Nice\", \"Paris\""});
  // A missing category: an error by default; with --missing mean each of its features takes the
  // share of rows in that category.
  TempFile m("cities_missing.csv", "city,rooms,label\nParis,3,a\n,2,b\nNice,5,a\nParis,1,b\n");
  CsvOptions om = classify("label");
  om.categorical = {"city"};
  check_mentions(error_of([&] { read_csv(m.path, om); }), {"line 3", "\"city\"", "expected a category"});
  om.missing = Missing::Mean;
  check_tensor(read_csv(m.path, om).x, {0, 1, 3, 1.0 / 3, 2.0 / 3, 2, 1, 0, 5, 0, 1, 1});
  // Names that are not feature columns.
  CsvOptions bad = classify("label");
  bad.categorical = {"label"};
  check_mentions(error_of([&] { read_csv(f.path, bad); }), {"no feature column \"label\" to one-hot encode", "it is the label"});
  bad.categorical = {"town"};
  check_mentions(error_of([&] { read_csv(f.path, bad); }), {"\"town\"", "--categorical", "\"city\", \"rooms\", \"zip\""});
  // Without --categorical, a string cell says how to read it.
  check_mentions(error_of([&] { read_csv(f.path, classify("label")); }), {"\"Paris\"", "--categorical \"city\""});
}

BOOST_AUTO_TEST_SUITE_END()
