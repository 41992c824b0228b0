// The grains of the kernel families and the thread-count rule (autograd/grain.h).
#include "autograd/grain.h"

#include <algorithm>
#include <cmath>

#include "autograd/parallel.h"

namespace normlab::autograd {

Grains default_grains() {
  Grains g;
  g.gemm = 393216;  // 2 threads from 786432 multiply-adds (92^3)
  g.gemm_intensity = 14;  // multiply-adds per operand byte
  g.conv = 131072;
  g.elementwise = 131072;  // 2 threads from 2^18 elements (1 MiB of float32)
  g.reduce = 131072;  // 2 threads from 2^18 elements
  // Row norms: 2 threads paid from 2^16 elements in isolation, but a norm's output is often read
  // row by row by one thread next (the LayerNorm LSTM reads its input projection's norm, (T B, 4H),
  // one step's rows at a time, and writes its gradient the same way), and halves written by two
  // cores then move between them at a cost the split did not save: the LayerNorm LSTM's step at
  // batch 32 (a norm of 458,752 elements) was slower on 2 threads than on 1. From 2^20 on the
  // split saves more than the move costs; the GPT step (norms of 2^17) gives up a little for it
  // (figures in bench/results/).
  g.norm = 524288;  // 2 threads from 2^20 elements
  g.batch_norm = 131072;  // 2 threads from 2^18 elements
  g.attention = 32768;
  g.pooling = 16384;
  g.embedding = 16384;
  // The optimizer's update: 2 threads from 2^16 elements. Each core updates the same half of a
  // parameter and its momentum at every step (base::parallel_parts gives the caller the front parts
  // and the workers the back ones), from its own cache: the MLP 784-256-256-10 step at batch 128
  // (Linear(784, 256)'s 200,704 weights) got faster on 2 threads, the small batches did not move
  // beyond the host's noise (figures in bench/results/). The grain rows cannot show it: with no job
  // before it, the update finds no worker awake and stays on the caller.
  g.optimizer = 32768;
  return g;
}

Grains& grains() {
  static Grains g = default_grains();
  return g;
}

int threads_for(double work, double grain) {
  const int n = num_threads();
  if (n <= 1) return 1;
  if (!(grain > 0)) return n;
  const double fit = std::floor(work / grain);
  return fit < 2 ? 1 : static_cast<int>(std::min<double>(n, fit));
}

}  // namespace normlab::autograd
