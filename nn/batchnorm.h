// BatchNorm modules (PyTorch's nn.BatchNorm1d and nn.BatchNorm2d): normalize each channel over the
// batch, with running statistics for evaluation.
#pragma once
#include <optional>
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// The shared part of BatchNorm1d and BatchNorm2d (PyTorch's _BatchNorm). Parameters weight (ones)
/// and bias (zeros), (C), when affine; buffers running_mean (zeros), running_var (ones) and
/// num_batches_tracked when track_running_stats. Training normalizes with the batch statistics and
/// updates the running ones (factor momentum, or 1/num_batches_tracked when momentum is nullopt: a
/// cumulative average); eval normalizes with the running statistics, or with the batch's when
/// track_running_stats is false.
///
/// momentum must be in [0, 1], both ends included (unlike SGD's momentum, which must be in [0, 1)):
/// running = (1 - momentum) running + momentum batch, so 1 keeps just the last batch's statistics
/// and 0 freezes the running ones. Both are meaningful, and PyTorch accepts them, so for PyTorch
/// compatibility normlab does too. PyTorch checks no range at all; normlab refuses values outside
/// [0, 1] (and NaN), where the update would extrapolate rather than average.
class BatchNorm : public Module {
 public:
  /// x: (N, C, *) as the subclass allows -> same shape.
  Tensor forward(const Tensor& x) override;
  /// "BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)".
  std::string repr() const override;

  /// The constructor's arguments (momentum nullopt: a cumulative average).
  int64_t num_features() const { return num_features_; }
  double eps() const { return eps_; }  ///< Added to the variance.
  std::optional<double> momentum() const { return momentum_; }  ///< Running-average factor; nullopt: cumulative average.
  bool affine() const { return affine_; }  ///< Whether there are weight and bias.
  bool track_running_stats() const { return track_running_stats_; }  ///< Whether there are running statistics.
  /// Per-channel scale and shift, (C) (undefined without affine).
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  ///< Per-channel shift, (C).
  /// Running statistics, (C) (undefined without track_running_stats).
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }  ///< Running variance, (C).
  /// The number of training batches seen, a rank-0 float32 tensor (PyTorch stores int64; float32
  /// counts exactly up to 2^24 batches).
  const Tensor& num_batches_tracked() const { return num_batches_tracked_; }
  /// running_mean = 0, running_var = 1, num_batches_tracked = 0.
  void reset_running_stats();
  /// Changes the momentum (in [0, 1]; nullopt: cumulative average), say to recompute population
  /// statistics; throws for a value outside [0, 1] and leaves the momentum as it was.
  void set_momentum(std::optional<double> momentum);

 protected:
  /// Name is the class name for repr and messages ("BatchNorm1d").
  BatchNorm(std::string name, int64_t num_features, double eps, std::optional<double> momentum, bool affine,
            bool track_running_stats, DType dtype);
  /// Throws unless x has this module's rank and num_features channels, naming both shapes.
  virtual void check_input(const Tensor& x) const = 0;
  /// The normalization itself, with autograd::batch_norm's arguments (rm, rv: the running statistics
  /// or undefined; f: their update factor). SyncBatchNorm takes its statistics over every rank.
  virtual Tensor normalize(const Tensor& x, const Tensor& rm, const Tensor& rv, bool use_batch_stats,
                           double f) const;
  const std::string& name() const { return name_; }  ///< The class name given to the constructor.

 private:
  std::string name_;
  int64_t num_features_;
  double eps_;
  std::optional<double> momentum_;
  bool affine_, track_running_stats_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};

/// BatchNorm1d: x (N, C) or (N, C, L), statistics per channel over N (or N L) values.
class BatchNorm1d : public BatchNorm {
 public:
  /// PyTorch's arguments and defaults; throws for num_features < 1, eps <= 0 or not finite, momentum
  /// outside [0, 1] (see BatchNorm).
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true, DType dtype = DType::Float32);

 protected:
  void check_input(const Tensor& x) const override;
};

/// BatchNorm2d: x (N, C, H, W), statistics per channel over N H W values.
class BatchNorm2d : public BatchNorm {
 public:
  /// As BatchNorm1d's.
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true, DType dtype = DType::Float32);

 protected:
  void check_input(const Tensor& x) const override;
};

}  // namespace normlab::nn
