// The data sets the experiments train on.
#include "experiments/datasets.h"

#include <cmath>
#include <cstdlib>

#include <algorithm>

#include "data/csv.h"
#include "data/fashion_mnist.h"
#include "data/synthetic.h"

namespace normlab::experiments {

namespace {

// A split of one file (or synthetic set) must train on every class it evaluates on.
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

}  // namespace

Splits load_data(const DataSpec& spec) {
  if (spec.train_limit < 0 || spec.test_limit < 0) throw Error("sample limits must be >= 0");
  if (spec.validation_fraction < 0 || spec.validation_fraction >= 1)
    throw Error("the validation fraction must be in [0, 1), got " + std::to_string(spec.validation_fraction));
  Splits s;
  if (spec.name == "fashion-mnist") {
    auto lim = [](int64_t n) { return n > 0 ? std::optional<int64_t>(n) : std::nullopt; };
    data::Dataset train = data::load_fashion_mnist(data::FashionMnistSplit::Train, spec.fashion_dir, lim(spec.train_limit));
    s.test = data::load_fashion_mnist(data::FashionMnistSplit::Test, spec.fashion_dir, lim(spec.test_limit));
    const int64_t nval = static_cast<int64_t>(spec.validation_fraction * train.size() + 0.5);
    data::Splits t = data::split_counts(train, nval, 0, spec.seed, true);
    s.train = std::move(t.train);
    s.validation = std::move(t.validation);
  } else if (spec.name == "csv") {
    if (spec.csv_path.empty()) throw Error("--dataset csv needs --csv FILE (and --label COLUMN)");
    if (spec.label.empty()) throw Error("--dataset csv needs --label COLUMN, the name of the label column");
    data::CsvOptions o = spec.csv_format;
    o.label_column = spec.label;
    data::Dataset all = data::read_csv(spec.csv_path, o);
    if (!spec.csv_test_path.empty()) {
      s.test = data::read_csv(spec.csv_test_path, o, all);
      data::Splits t = data::split_fractions(all, spec.validation_fraction, 0, spec.seed, true);
      s.train = std::move(t.train), s.validation = std::move(t.validation);
    } else {
      s = data::split_fractions(all, spec.validation_fraction, spec.test_fraction, spec.seed, true);
    }
    check_split_classes(s);  // held-out classes, of the split or of the test file, must be trained on
  } else {
    const auto& names = data::synthetic_names();
    if (std::find(names.begin(), names.end(), spec.name) == names.end()) {
      std::string known = "fashion-mnist, csv";
      for (const auto& n : names) known += ", " + n;
      throw Error("unknown dataset '" + spec.name + "' (expected one of: " + known + ")");
    }
    data::Dataset all = data::make_synthetic(spec.name, spec.samples, spec.noise, spec.seed);
    s = data::split_fractions(all, spec.validation_fraction, spec.test_fraction, spec.seed, true);
    check_split_classes(s);
  }
  if (spec.name != "fashion-mnist") {  // (Fashion-MNIST reads only the first N images of its files)
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
