// How many threads one kernel call uses: a grain per kernel family, the least work per thread that
// pays for splitting it, so that a call never runs slower on more threads than on one.
//
// The rule: a call with `work` units of its family runs on min(num_threads(), work / grain)
// threads (at least 1); a matrix product also needs gemm_intensity multiply-adds per byte of its
// operands. The grains were measured by bench/grain_bench.cc, which times each family over a range
// of sizes on 1 and 2 threads with every grain set to 0 (figures in bench/results/): each default
// is the size from which 2 threads were faster than 1, halved (one grain per thread); the
// optimizer's is set from the training steps instead (autograd/grain.cc). What sets them is the
// cost of handing work to a second core: the job's start-up (the `pool start-up` bench rows) and
// the data moving from the caller's cache to the other core's; below the grain, a call's work is
// of that order. Those costs differ between hosts (and, on a VM, over time): the grains are one
// host's figures.
//
// The thread count only ever changes speed: every kernel computes each output with the same
// sequence of operations on any number of threads (the reduction orders are fixed by the shapes).
#pragma once
#include <cstdint>

namespace normlab::autograd {

/// The least work per thread, per kernel family (see the top of this file for the rule).
struct Grains {
  double gemm = 0;         ///< multiply-adds (M N K, times the batch), matmul and linear
  /// The least multiply-adds per byte of a product's operands (A, B and C) for it to be split: a
  /// second core first has to fetch its share of the operands, which in a training step the other
  /// core has usually just written (the weights after the update, the activations after the layer
  /// before), and between two cores bytes move far slower than multiply-adds run (bench/results/).
  /// Linear(784, 256) reaches it from a batch of about 80, square products from about 168, and
  /// the GPT's attention projection (1024 x 128 x 128, 15 per byte) just does.
  double gemm_intensity = 0;
  double conv = 0;         ///< multiply-adds of a convolution (forward, input or weight gradient)
  double elementwise = 0;  ///< output elements of an elementwise op (unary, binary, axpy)
  double reduce = 0;       ///< input elements of a sum, mean or max over a dim
  double norm = 0;         ///< elements normalized row by row (LayerNorm, Group/Instance/RMSNorm, BatchNorm's y)
  double batch_norm = 0;   ///< elements of BatchNorm's per-channel sums (statistics, backward), split by channels
  double attention = 0;    ///< scores times head size (B H T T D) of scaled dot-product attention
  double pooling = 0;      ///< window reads of max or average pooling
  double embedding = 0;    ///< elements of an embedding's weight gradient scatter (ids x dim)
  double optimizer = 0;    ///< elements of a parameter updated by SGD (Adam and AdamW update on one thread)
};

/// The grains in use (process-wide). Defaults measured as above; bench/grain_bench.cc sets them to
/// 0 to time every size on every thread, and restores them. Not for concurrent modification.
Grains& grains();

/// The grains measured on this project's reference host (see the top of this file).
Grains default_grains();

/// Threads for `work` units of a family whose grain is `grain`: min(num_threads(), work / grain),
/// at least 1 (all threads when grain is 0).
int threads_for(double work, double grain);

}  // namespace normlab::autograd
