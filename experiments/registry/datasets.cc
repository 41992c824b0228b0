// The data sets the experiments train on.
#include "experiments/registry/datasets.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <algorithm>

#include "data/csv.h"
#include "data/fashion_mnist.h"
#include "data/synthetic.h"
#include "experiments/registry/entries.h"
#include "experiments/support/errors.h"
#include "experiments/support/output.h"

namespace normlab::experiments {

namespace {

// True when class labels look like numbers to predict: many classes, all numbers, some not whole.
bool looks_continuous(const data::Dataset& d) {
  if (d.class_names.size() <= 20) return false;
  bool fraction = false;
  for (const std::string& c : d.class_names) {
    char* end = nullptr;
    const double v = std::strtod(c.c_str(), &end);
    if (end == c.c_str() || *end != '\0') return false;
    fraction = fraction || v != std::floor(v);
  }
  return fraction;
}

// A split of one file (or synthetic set) must train on every class it evaluates on.
void check_split_classes(const Splits& s) {
  if (!s.train.is_classification()) return;  // regression targets
  try {
    data::check_classes_in_train(s);
  } catch (const Error& e) {
    if (looks_continuous(s.train))
      throw Error(std::string(e.what()) + ". The label column \"" + s.train.label_name + "\" holds " +
                  std::to_string(s.train.num_classes) + " different numbers: to predict a number, use --task regression");
    throw Error(std::string(e.what()) + "; give that class more samples, or split differently (--test-fraction, "
                "--val-fraction, --data-seed)");
  }
}

// A fraction of n samples that rounds to none (--val-fraction 0.1 of 4 samples): a usage error
// saying what the fraction gave, why, and the smallest fraction that gives one sample.
void check_fraction_gives_samples(const std::string& flag, double fraction, int64_t n, int64_t got,
                                  const std::string& part) {
  if (fraction <= 0 || got > 0 || n <= 0) return;
  const double least = 0.5 / static_cast<double>(n);
  const double step = std::pow(10.0, std::floor(std::log10(least)) - 1);
  throw UsageError(flag + " " + fmt(fraction) + " of " + std::to_string(n) + " samples rounds to 0 " + part +
                   " samples (" + fmt(fraction) + " x " + std::to_string(n) + " = " + fmt(fraction * n, 3) +
                   ", rounded to the nearest whole sample): give " + flag + " " +
                   fmt(std::ceil(least / step - 1e-9) * step, 3) + " or more, or more samples");
}

// A sample limit above the samples there are: a usage error naming the flag and the size.
void check_limit(const std::string& flag, int64_t limit, int64_t n, const std::string& part) {
  if (limit > n)
    throw UsageError(flag + " " + std::to_string(limit) + " is larger than the " + part + " split (" +
                     std::to_string(n) + " samples): give " + flag + " " + std::to_string(n) + " or less (0: all)");
}

// A Fashion-MNIST limit above its file's count: the usage error of the other data sets (the
// label file's header says the count; a missing or damaged file is left to the loader to report).
void check_fashion_limit(const std::string& flag, int64_t limit, const std::string& dir, const std::string& prefix,
                         const std::string& part) {
  const std::string labels = (dir.empty() || dir.back() == '/' ? dir : dir + "/") + prefix + "-labels-idx1-ubyte.gz";
  if (limit <= 0 || !std::filesystem::exists(labels)) return;
  int64_t total = 0;
  try {
    data::read_idx_labels(labels, 1, &total);
  } catch (const Error&) {
    return;
  }
  check_limit(flag, limit, total, part);
}

Splits load_fashion(const DataSpec& spec) {
  auto lim = [](int64_t n) { return n > 0 ? std::optional<int64_t>(n) : std::nullopt; };
  check_fashion_limit("--train-limit", spec.train_limit, spec.fashion_dir, "train", "fashion-mnist training");
  check_fashion_limit("--test-limit", spec.test_limit, spec.fashion_dir, "t10k", "fashion-mnist test");
  data::Dataset train = data::load_fashion_mnist(data::FashionMnistSplit::Train, spec.fashion_dir, lim(spec.train_limit));
  Splits s;
  s.test = data::load_fashion_mnist(data::FashionMnistSplit::Test, spec.fashion_dir, lim(spec.test_limit));
  const int64_t nval = static_cast<int64_t>(spec.validation_fraction * train.size() + 0.5);
  data::Splits t = data::split_counts(train, nval, 0, spec.seed, true);
  s.train = std::move(t.train);
  s.validation = std::move(t.validation);
  return s;
}

// --class-names: one name per class of the label column, distinct, for a classification.
void check_class_names(const DataSpec& spec, const data::Dataset& d) {
  const auto& names = spec.class_names;
  if (names.empty()) return;
  if (!d.is_classification())
    throw Error("--class-names names the classes of a classification; the label column \"" + spec.label +
                "\" is read as a regression target");
  std::string labels;
  for (const std::string& c : d.class_names) labels += (labels.empty() ? "" : ", ") + c;
  if (static_cast<int64_t>(names.size()) != d.num_classes)
    throw Error("--class-names gives " + std::to_string(names.size()) + " names; the label column \"" + spec.label +
                "\" has " + std::to_string(d.num_classes) + " classes (" + labels + "), in that order");
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].empty() || std::find(names.begin(), names.begin() + i, names[i]) != names.begin() + i)
      throw Error("--class-names: name " + std::to_string(i + 1) + " (\"" + names[i] + "\") is " +
                  (names[i].empty() ? "empty" : "given twice") + "; expected one distinct name per class (" + labels + ")");
}

Splits load_csv(const DataSpec& spec) {
  if (spec.csv_path.empty()) throw Error("--dataset csv needs --csv FILE (and --label COLUMN)");
  if (spec.label.empty()) throw Error("--dataset csv needs --label COLUMN, the name of the label column");
  data::CsvOptions o = spec.csv_format;
  o.label_column = spec.label;
  data::Dataset all = data::read_csv(spec.csv_path, o);
  if (all.num_classes == 1)
    throw Error(spec.csv_path + ": the label column \"" + spec.label + "\" holds one value, \"" + all.class_names[0] +
                "\", in every row: a classifier needs at least two classes");
  Splits s;
  if (!spec.csv_test_path.empty()) {
    s.test = data::read_csv(spec.csv_test_path, o, all);
    data::Splits t = data::split_fractions(all, spec.validation_fraction, 0, spec.seed, true);
    s.train = std::move(t.train), s.validation = std::move(t.validation);
  } else {
    s = data::split_fractions(all, spec.validation_fraction, spec.test_fraction, spec.seed, true);
  }
  check_class_names(spec, all);
  return s;
}

Splits load_synthetic(const DataSpec& spec) {
  data::Dataset all = data::make_synthetic(spec.name, spec.samples, spec.noise, spec.seed);
  return data::split_fractions(all, spec.validation_fraction, spec.test_fraction, spec.seed, true);
}

std::vector<DatasetEntry> builtin_datasets() {
  std::vector<DatasetEntry> t;
  t.push_back({.name = "fashion-mnist",
               .flags = {"--data-dir"},
               .reads_limits = true,
               .own_test_set = true,
               .hidden = {256, 256},
               .warmup = 50,
               .image_shape = {1, 28, 28},
               .input_rule = "the 28x28 uint8 image, row-major, each pixel / 255 (784 features in [0, 1])",
               .load = load_fashion,
               .test_split = [](const DataSpec& spec) {
                 return data::load_fashion_mnist(data::FashionMnistSplit::Test, spec.fashion_dir);
               }});
  t.push_back({.name = "csv",
               .flags = {"--csv", "--csv-test", "--label", "--csv-sep", "--csv-comment", "--csv-no-header",
                         "--csv-skip-rows", "--csv-drop", "--csv-columns", "--csv-na", "--missing", "--task",
                         "--categorical", "--class-names"},
               .input_rule = "the CSV's feature columns in the order of feature_names, as numbers; a column of "
                             "categories (\"categories\") as one 0/1 feature \"<column>=<category>\" per category",
               .load = load_csv});
  // A synthetic set is regenerated from its recipe for eval: the same arguments give the same bits.
  for (const std::string& name : data::synthetic_names())
    t.push_back({.name = name,
                 .family = "a synthetic data set",
                 .flags = {"--samples", "--noise"},
                 .input_rule = "the 2 coordinates of a point of the synthetic set",
                 .load = load_synthetic,
                 .test_split = [](const DataSpec& spec) { return load_synthetic(spec).test; },
                 .recipe = [](const DataSpec& spec) -> nlohmann::json {
                   return {{"samples", spec.samples}, {"noise", spec.noise}, {"seed", spec.seed},
                           {"validation_fraction", spec.validation_fraction}, {"test_fraction", spec.test_fraction}};
                 },
                 .read_recipe = [](DataSpec& spec, const nlohmann::json& j) {
                   spec.samples = j.at("samples").get<int64_t>();
                   spec.noise = j.at("noise").get<double>();
                   spec.seed = j.at("seed").get<uint64_t>();
                   spec.validation_fraction = j.at("validation_fraction").get<double>();
                   spec.test_fraction = j.at("test_fraction").get<double>();
                 }});
  // A character corpus for `normlab train --arch gpt` (text_training.h) and the GPT norm studies of
  // compare and sweep (text_compare.h), which read it themselves: not a table of samples.
  t.push_back({.name = "text",
               .flags = {"--text", "--block-size", "--layers", "--heads", "--width", "--position", "--steps",
                         "--clip-grad-norm", "--train-tokens"},
               .input_rule = "characters, each its id in the checkpoint's vocabulary",
               .load = [](const DataSpec&) -> Splits {
                 throw Error("--dataset text is a character corpus for a language model: it trains with "
                             "normlab train, compare or sweep --arch gpt --dataset text (not study)");
               }});
  return t;
}

std::vector<DatasetEntry>& dataset_table() {
  static std::vector<DatasetEntry> t = builtin_datasets();
  return t;
}

}  // namespace

const std::vector<DatasetEntry>& datasets() { return dataset_table(); }
const DatasetEntry& dataset(const std::string& name) { return find_entry(datasets(), name, "dataset"); }
void register_dataset(DatasetEntry entry) {
  if (!entry.load) throw Error("register_dataset: the data set '" + entry.name + "' needs a load function");
  add_entry(dataset_table(), std::move(entry), "register_dataset", "dataset");
}

Splits load_data(const DataSpec& spec) {
  if (spec.train_limit < 0 || spec.test_limit < 0) throw Error("sample limits must be >= 0");
  if (spec.validation_fraction < 0 || spec.validation_fraction >= 1)
    throw Error("the validation fraction must be in [0, 1), got " + std::to_string(spec.validation_fraction));
  const DatasetEntry& entry = dataset(spec.name);
  Splits s = entry.load(spec);
  const bool split_test = !entry.own_test_set && spec.csv_test_path.empty();  // the test part is a fraction too
  const int64_t split_n = s.train.size() + s.validation.size() + (split_test ? s.test.size() : 0);
  if (!spec.validation_defaulted)
    check_fraction_gives_samples("--val-fraction", spec.validation_fraction, split_n, s.validation.size(), "validation");
  if (split_test) check_fraction_gives_samples("--test-fraction", spec.test_fraction, split_n, s.test.size(), "test");
  if (!entry.reads_limits) {
    check_limit("--train-limit", spec.train_limit, s.train.size(), "training");
    check_limit("--test-limit", spec.test_limit, s.test.size(), "test");
    check_split_classes(s);  // held-out classes, of the split or of the test file, must be trained on
    if (spec.train_limit > 0 && spec.train_limit < s.train.size()) s.train = data::first_n(s.train, spec.train_limit);
    if (spec.test_limit > 0 && spec.test_limit < s.test.size()) s.test = data::first_n(s.test, spec.test_limit);
    check_split_classes(s);
  }
  if (s.train.size() == 0) throw Error("the training split is empty");
  if (s.test.size() == 0) throw Error("the test split is empty: give a test file or a test fraction above 0");
  const auto st = data::Standardizer::fit(s.train);
  s.standardizer = st;
  s.train = st.apply(s.train);
  if (s.validation.size() > 0) s.validation = st.apply(s.validation);
  if (s.test.size() > 0) s.test = st.apply(s.test);
  return s;
}

std::string describe(const DataSpec& spec, const Splits& s) {
  return spec.name + (spec.name == "csv" ? " " + spec.csv_path : "") + " (" + std::to_string(s.train.size()) + " train / " +
         std::to_string(s.validation.size()) + " validation / " + std::to_string(s.test.size()) + " test, " +
         std::to_string(s.train.features()) + " features, " +
         (s.train.is_classification() ? std::to_string(s.train.num_classes) + " classes"
                                      : "regression target " + s.train.label_name) +
         (s.train.dropped_rows > 0 ? ", " + std::to_string(s.train.dropped_rows) + " rows with a missing value left out"
                                   : "") +
         ")";
}

}  // namespace normlab::experiments
