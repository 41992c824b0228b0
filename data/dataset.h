// Dataset: features, labels or targets, and class names of one set of samples; subsets and standardization.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace normlab::data {

/// A set of N samples with D float32 features each, for classification (labels) or regression (y).
struct Dataset {
  autograd::Tensor x;                      ///< (N, D) float32 features
  std::vector<int64_t> labels;             ///< (N) class indices in [0, num_classes); empty for regression
  autograd::Tensor y;                      ///< (N, 1) float32 targets for regression; undefined otherwise
  int64_t num_classes = 0;                 ///< 0 for regression
  std::vector<std::string> class_names;    ///< (num_classes) name of each class index
  std::vector<std::string> feature_names;  ///< (D) column names (CSV), empty when features are unnamed
  std::string label_name;                  ///< the label column (CSV), empty otherwise
  std::string name;                        ///< where it came from, e.g. "fashion-mnist train", "moons"
  std::vector<int64_t> lines;              ///< (N) the file line of each sample (CSV), empty otherwise
  std::vector<float> fill;                 ///< (D) CSV with --missing mean: what a missing feature becomes
                                           ///< (the training file's column means); empty otherwise
  int64_t dropped_rows = 0;                ///< CSV with --missing drop: rows left out for a missing cell
  /// CSV with categorical columns (--categorical): the file's feature columns before one-hot
  /// encoding, and each categorical column's categories in order; its features are named
  /// "<column>=<category>" and sit where the column was. Both empty without categorical columns.
  std::vector<std::string> source_columns;
  std::vector<std::pair<std::string, std::vector<std::string>>> categories;  ///< (column, its categories in order) for each categorical column

  /// N, the number of samples.
  int64_t size() const { return x.defined() ? x.size(0) : 0; }
  /// D, the number of features.
  int64_t features() const { return x.defined() ? x.size(1) : 0; }
  /// True when samples carry class labels (num_classes > 0), false for regression.
  bool is_classification() const { return num_classes > 0; }
  /// The samples at these indices (any order, repeats allowed), copied: x (N, D) -> (len(indices), D).
  Dataset subset(const std::vector<int64_t>& indices) const;
  /// The samples [begin, end) in order, copied.
  Dataset slice(int64_t begin, int64_t end) const;
  /// Throws unless x is (N, D) float32 and labels/y/class_names agree with N and num_classes.
  void validate() const;
};

/// Per-feature mean and standard deviation of a training set, applied to every split:
/// x' = (x - mean) / std. A constant feature (std 0) is only centred (divided by 1), never by 0.
/// Regression targets likewise: y' = (y - y_mean) / y_std (a model predicts y', and y = y' y_std + y_mean).
struct Standardizer {
  std::vector<double> mean;  ///< (D)
  std::vector<double> std;   ///< (D) population std (divides by N), 0 for a constant feature
  /// The regression targets' mean (0 otherwise).
  double y_mean = 0, y_std = 1;  ///< and standard deviation (1 for a constant target, and otherwise)

  /// Computes mean and std of train.x, in float64 with a fixed summation order.
  static Standardizer fit(const Dataset& train);
  /// A copy of ds with standardized features (ds must have the same D as the training set).
  Dataset apply(const Dataset& ds) const;
};

}  // namespace normlab::data
