// The normalizations' backward in a create_graph pass: the first derivatives (dx, dweight, dbias)
// from the fused backward kernel, recorded as one op whose own backward is the double-backward
// formula written out below (of recorded ops, so it can be differentiated again).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/engine.h"
#include "autograd/tensor.h"

namespace normlab::autograd {

/// How a normalization groups x: x viewed as `view`, its statistics reduced over `stat_dims` (each
/// group of M values has one mean and one rstd), the weight viewed as `param_view` (broadcasting
/// over view) and its gradient summed over `param_dims`.
///   LayerNorm: view (rows, n), stats over {1}, weight (1, n) summed over {0}.
///   BatchNorm: view (N, C, L), stats over {0, 2}, weight (1, C, 1) summed over {0, 2}.
///   GroupNorm: view (N, G, C/G, S), stats over {2, 3}, weight (1, G, C/G, 1) summed over {0, 3}.
///   RMSNorm:   as LayerNorm, uncentered (NormStats::centered).
/// Which of the three views a layout is (the fused double-backward kernel reads its sizes off view).
enum class NormKind { Rows, Channels, Groups };

struct NormLayout {
  NormKind kind;                    ///< Rows: LayerNorm, RMSNorm; Channels: BatchNorm; Groups: GroupNorm
  Shape view;                       ///< x's shape as the formula sees it
  std::vector<int64_t> stat_dims;   ///< dims of one group (its statistics)
  Shape param_view;                 ///< the weight's shape as it broadcasts over view
  std::vector<int64_t> param_dims;  ///< dims a weight's gradient sums over
};

/// The statistics a normalization used, as constants shaped to broadcast over layout.view: the
/// mean mu and rstd r = 1 / sqrt(var + eps). batch_stats: they are functions of x (LayerNorm,
/// GroupNorm, BatchNorm in training), recomputed from x with eps when a pass differentiates the
/// formula itself (third derivatives); otherwise constants (BatchNorm in eval, running statistics).
/// centered = false is RMSNorm: no mean (mu undefined), r = 1 / sqrt(mean(x^2) + eps).
struct NormStats {
  Tensor mu, r;
  bool batch_stats = true;
  double eps = 1e-5;
  bool centered = true;
  /// SyncBatchNorm: a group spans every rank's part of the batch. When set, every group mean in the
  /// formula is a sum over the ranks (in place on `n` doubles, the same on every rank) divided by
  /// `count`, the group's size over all ranks; the weight's gradient stays this rank's own.
  std::function<void(double* values, int64_t n)> allreduce_sum;
  double count = 0;
};

/// Writes the first derivatives into dx, dw, db (each undefined when not wanted): the fused kernel.
using NormBackwardKernel = std::function<void(const Tensor& dx, const Tensor& dw, const Tensor& db)>;

/// Data pointer of an optional tensor (null when undefined), for the kernels' optional arguments.
template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

/// The first-order backward of a normalization: fresh buffers for the gradients `need` asks for
/// of {x, w, b} (b undefined and need of size 2 for RMSNorm), filled by kernel.
std::vector<Tensor> norm_backward_into_buffers(const Needs& need, const Tensor& x, const Tensor& w,
                                               const Tensor& b, const NormBackwardKernel& kernel);

/// The gradients {dx, dweight, dbias} of a normalization y = xhat * w + b in a create_graph pass:
/// computed by `kernel` (the first-order values, bit for bit), recorded as one node `name` of inputs
/// {g, x, w} whose backward is norm_double_backward. param_shape: the weight's (or bias's) shape.
std::vector<Tensor> recorded_norm_backward(const char* name, const NormLayout& layout, const NormStats& stats,
                                           const Tensor& g, const Tensor& x, const Tensor& w,
                                           const Shape& param_shape, const Needs& need,
                                           const NormBackwardKernel& kernel);

/// The double backward: the gradients with respect to {g, x, w} of
///   <ggx, dx> + <ggw, dw> + <ggb, db>,
/// where dx, dw, db are the normalization's first derivatives for the output gradient g (any of
/// ggx, ggw, ggb may be undefined: zero). With h = g * w, xhat = (x - mu) r, means over a group:
///   F(u) = r (u - mean(u) - xhat mean(u xhat))   (the vector-Jacobian product of xhat(x); dx = F(h))
///   d/dg = w F(ggx) + ggw xhat + ggb
///   d/dw = sum over param_dims of g F(ggx)
///   d/dx = r^2 [xhat (3 mean(h xhat) mean(a xhat) - mean(a h) + mean(a) mean(h))
///               - mean(a xhat) (h - mean(h)) - mean(h xhat) (a - mean(a))] + F(ggw g),   a = ggx.
/// Uncentered (RMSNorm: xhat = x r), the same with every mean(a), mean(h), mean(u) term dropped.
/// With constant statistics (BatchNorm in eval): dx = h r, so d/dg = w ggx r + ggw xhat + ggb,
/// d/dw = sum of g ggx r, d/dx = ggw g r. Shapes: g and ggx like x, w/ggw/ggb param_shape.
/// With grad mode off (the pass that differentiates no further) one fused kernel computes all three
/// (two sweeps over x: seven sums per group, then the outputs), the sums accumulated in double in a
/// fixed order; with grad mode on, the formula of recorded ops above.
std::vector<Tensor> norm_double_backward(const NormLayout& layout, const NormStats& stats, const Tensor& x,
                                         const Tensor& g, const Tensor& w, const Tensor& ggx, const Tensor& ggw,
                                         const Tensor& ggb, const Needs& need);

}  // namespace normlab::autograd
