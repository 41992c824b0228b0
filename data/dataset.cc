// Dataset: subsets, slices, consistency checks and standardization with training-set statistics.
#include "data/dataset.h"

#include <cmath>
#include <cstring>

namespace normlab::data {

using autograd::DType;
using autograd::Tensor;

Dataset Dataset::subset(const std::vector<int64_t>& indices) const {
  validate();
  const int64_t n = size(), d = features(), m = static_cast<int64_t>(indices.size());
  Dataset out;
  out.num_classes = num_classes;
  out.class_names = class_names;
  out.feature_names = feature_names;
  out.label_name = label_name;
  out.name = name;
  out.fill = fill;
  out.dropped_rows = dropped_rows;
  out.source_columns = source_columns;
  out.categories = categories;
  out.x = autograd::empty({m, d});
  if (y.defined()) out.y = autograd::empty({m, 1});
  if (is_classification()) out.labels.resize(m);
  if (!lines.empty()) out.lines.resize(m);
  const float* src = x.data<float>();
  float* dst = out.x.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    const int64_t j = indices[i];
    if (j < 0 || j >= n)
      throw Error("subset of \"" + name + "\": index " + std::to_string(j) +
                  " is out of range for a data set of " + std::to_string(n) + " samples");
    if (d > 0) std::memcpy(dst + i * d, src + j * d, d * sizeof(float));
    if (is_classification()) out.labels[i] = labels[j];
    if (!lines.empty()) out.lines[i] = lines[j];
    if (y.defined()) out.y.data<float>()[i] = y.data<float>()[j];
  }
  return out;
}

Dataset Dataset::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > size())
    throw Error("slice of \"" + name + "\": [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") is not a range inside [0, " + std::to_string(size()) + ")");
  std::vector<int64_t> idx(end - begin);
  for (int64_t i = begin; i < end; ++i) idx[i - begin] = i;
  return subset(idx);
}

void Dataset::validate() const {
  const std::string what = "data set \"" + name + "\": ";
  check(x.defined(), what + "has no features (x is undefined)");
  check(x.dim() == 2, what + "expected features x of shape (N, D), got " + autograd::shape_str(x.shape()));
  check(x.dtype() == DType::Float32, what + "expected float32 features, got " + dtype_name(x.dtype()));
  const int64_t n = x.size(0);
  check(feature_names.empty() || static_cast<int64_t>(feature_names.size()) == x.size(1),
        what + std::to_string(feature_names.size()) + " feature names for " +
            std::to_string(x.size(1)) + " features");
  check(lines.empty() || static_cast<int64_t>(lines.size()) == n,
        what + std::to_string(lines.size()) + " line numbers for " + std::to_string(n) + " samples");
  if (is_classification()) {
    check(static_cast<int64_t>(labels.size()) == n,
          what + std::to_string(labels.size()) + " labels for " + std::to_string(n) + " samples");
    check(static_cast<int64_t>(class_names.size()) == num_classes,
          what + std::to_string(class_names.size()) + " class names for " +
              std::to_string(num_classes) + " classes");
    for (size_t i = 0; i < labels.size(); ++i)
      check(labels[i] >= 0 && labels[i] < num_classes, [&] {
        return what + "label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
               " is outside [0, " + std::to_string(num_classes) + ")";
      });
  } else {
    check(num_classes == 0, what + "num_classes must be >= 0, got " + std::to_string(num_classes));
    check(labels.empty(), what + "has labels but num_classes is 0");
    check(y.defined(), what + "has neither class labels nor regression targets y");
    check(y.shape() == autograd::Shape{n, 1} && y.dtype() == DType::Float32,
          what + "expected float32 targets y of shape (" + std::to_string(n) + ", 1), got " +
              dtype_name(y.dtype()) + " " + autograd::shape_str(y.shape()));
  }
}

Standardizer Standardizer::fit(const Dataset& train) {
  train.validate();
  const int64_t n = train.size(), d = train.features();
  check(n > 0, "standardize: the training set \"" + train.name + "\" is empty");
  const float* x = train.x.data<float>();
  Standardizer s;
  s.mean.assign(d, 0.0);
  s.std.assign(d, 0.0);
  // Two passes in float64, rows in order: mean = sum x / N, var = sum (x - mean)^2 / N. A constant
  // float32 feature gets std exactly 0: N float32 values sum exactly in float64 (N < 2^29), so the
  // mean is the value itself and every deviation is 0.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) s.mean[j] += x[i * d + j];
  for (int64_t j = 0; j < d; ++j) s.mean[j] /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const double c = x[i * d + j] - s.mean[j];
      s.std[j] += c * c;
    }
  for (int64_t j = 0; j < d; ++j) s.std[j] = std::sqrt(s.std[j] / static_cast<double>(n));
  if (train.y.defined()) {  // regression targets, the same two passes
    const float* y = train.y.data<float>();
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < n; ++i) sum += y[i];
    s.y_mean = sum / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) ss += (y[i] - s.y_mean) * (y[i] - s.y_mean);
    const double sd = std::sqrt(ss / static_cast<double>(n));
    s.y_std = sd > 0 ? sd : 1.0;
  }
  return s;
}

Dataset Standardizer::apply(const Dataset& ds) const {
  ds.validate();
  const int64_t n = ds.size(), d = ds.features();
  check(static_cast<int64_t>(mean.size()) == d && static_cast<int64_t>(std.size()) == d,
        "standardize: \"" + ds.name + "\" has " + std::to_string(d) +
            " features, but the statistics were computed on " + std::to_string(mean.size()));
  Dataset out = ds;
  out.x = autograd::empty({n, d});
  const float* src = ds.x.data<float>();
  float* dst = out.x.data<float>();
  std::vector<double> inv(d);
  for (int64_t j = 0; j < d; ++j) inv[j] = std[j] > 0 ? 1.0 / std[j] : 1.0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)
      dst[i * d + j] = static_cast<float>((src[i * d + j] - mean[j]) * inv[j]);
  if (ds.y.defined()) {
    out.y = autograd::empty({n, 1});
    for (int64_t i = 0; i < n; ++i)
      out.y.data<float>()[i] = static_cast<float>((ds.y.data<float>()[i] - y_mean) / y_std);
  }
  return out;
}

}  // namespace normlab::data
