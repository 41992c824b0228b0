// Train / validation / test splits: sizes checked, rows permuted with a seeded Fisher-Yates shuffle.
#include "data/split.h"

#include <algorithm>
#include <cmath>

#include "autograd/generator.h"

namespace normlab::data {

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  check(n >= 0, "permutation: n must be >= 0, got " + std::to_string(n));
  std::vector<int64_t> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  autograd::Generator gen(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[gen.randint(i + 1)]);
  return p;
}

Splits split_counts(const Dataset& ds, int64_t validation, int64_t test, uint64_t seed, bool shuffle) {
  ds.validate();
  const int64_t n = ds.size();
  const std::string what = "split of \"" + ds.name + "\" (" + std::to_string(n) + " samples): ";
  check(validation >= 0, what + "the validation size must be >= 0, got " + std::to_string(validation));
  check(test >= 0, what + "the test size must be >= 0, got " + std::to_string(test));
  check(validation + test < n, what + "validation " + std::to_string(validation) + " + test " +
                                   std::to_string(test) + " leave no training samples");
  std::vector<int64_t> order(n);
  if (shuffle) order = permutation(n, seed);
  else for (int64_t i = 0; i < n; ++i) order[i] = i;
  const int64_t n_train = n - validation - test;
  auto part = [&](int64_t begin, int64_t end) {
    return ds.subset(std::vector<int64_t>(order.begin() + begin, order.begin() + end));
  };
  return Splits{part(0, n_train), part(n_train, n_train + validation), part(n_train + validation, n)};
}

Splits split_fractions(const Dataset& ds, double validation, double test, uint64_t seed, bool shuffle) {
  const std::string what = "split of \"" + ds.name + "\": ";
  check(validation >= 0 && validation < 1,
        what + "the validation fraction must be in [0, 1), got " + std::to_string(validation));
  check(test >= 0 && test < 1, what + "the test fraction must be in [0, 1), got " + std::to_string(test));
  const double n = static_cast<double>(ds.size());
  return split_counts(ds, std::llround(validation * n), std::llround(test * n), seed, shuffle);
}

void check_classes_in_train(const Splits& s) {
  if (!s.train.is_classification()) return;
  std::vector<bool> trained(s.train.num_classes, false);
  for (int64_t c : s.train.labels) trained[c] = true;
  using Part = std::pair<const char*, const Dataset*>;
  for (const auto& [part, ds] : {Part{"validation", &s.validation}, Part{"test", &s.test}}) {
    const auto bad = std::find_if(ds->labels.begin(), ds->labels.end(), [&](int64_t c) { return !trained[c]; });
    if (bad == ds->labels.end()) continue;
    const int64_t c = *bad;
    std::string where = ds->name;
    if (!ds->lines.empty()) {  // the first line of the file holding that class in this part
      int64_t line = -1;
      for (size_t i = 0; i < ds->labels.size(); ++i)
        if (ds->labels[i] == c && (line < 0 || ds->lines[i] < line)) line = ds->lines[i];
      where += ": line " + std::to_string(line);
    }
    throw Error(where + ": class \"" + ds->class_names[c] + "\" occurs in the " + part +
                " part of the split but not in its training part (" + std::to_string(s.train.size()) +
                " samples): the model would be scored on a class it never trains on");
  }
}

Dataset first_n(const Dataset& ds, int64_t n) {
  check(n >= 1 && n <= ds.size(), "first_n of \"" + ds.name + "\": expected 1 to " +
                                      std::to_string(ds.size()) + " samples, got " + std::to_string(n));
  return ds.slice(0, n);
}

}  // namespace normlab::data
