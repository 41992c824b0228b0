// Train / validation / test splits of a data set: shuffled with a seed, or in file order.
#pragma once
#include <cstdint>

#include "data/dataset.h"

namespace normlab::data {

/// The three parts of a split (validation or test may be empty: shape (0, D)).
struct Splits {
  /// The training part.
  Dataset train, validation, test;  ///< the test part
  /// \var validation
  /// The validation part.
  Standardizer standardizer;  ///< the statistics the features were standardized with (empty: not standardized)
};

/// Splits ds into validation and test of these sizes and train (the rest, at least 1 sample).
/// shuffle: rows are first permuted with Generator(seed) (Fisher-Yates); otherwise the parts are
/// consecutive in ds's order: train first, then validation, then test.
Splits split_counts(const Dataset& ds, int64_t validation, int64_t test, uint64_t seed, bool shuffle = true);

/// Same with fractions of ds in [0, 1): sizes round(fraction * N), train the rest (at least 1 sample).
Splits split_fractions(const Dataset& ds, double validation, double test, uint64_t seed, bool shuffle = true);

/// Checks that every class of the validation and test parts also occurs in the training part (the
/// classes are mapped over the whole data set before splitting, so a class only held out would
/// be scored without ever being trained on). Throws naming the data set, the class, the part and,
/// when the samples carry file lines, the first line holding it.
void check_classes_in_train(const Splits& s);

/// For a data set with a given test set (Fashion-MNIST): the first n samples, in order.
Dataset first_n(const Dataset& ds, int64_t n);

/// A random permutation of [0, n) from Generator(seed) (Fisher-Yates, from the last element down).
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

}  // namespace normlab::data
