// LayerNorm and BatchNorm1d benchmarks on a 4096x1024 float32 batch, through the user-facing path
// (nn::LayerNorm / nn::BatchNorm1d in training mode, autograd, backward with a given upstream
// gradient, weights requiring grad), plus kernel-only rows (normlab only). bench/pytorch_bench.py
// times the same module workloads under the same names. GB/s counts the minimal traffic
// of the operation: forward 8 B per element (read x, write y), LayerNorm backward 12
// (read dy, x; write dx), BatchNorm backward 20 (dy and x read twice, one pass for the per-channel
// sums that every dx needs, dx written).
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/norm.h"
#include "bench/bench.h"
#include "nn/batchnorm.h"
#include "nn/layernorm.h"

namespace normlab::bench {

namespace {

using autograd::Tensor;
namespace k = autograd::kernels;

constexpr int64_t kRows = 4096, kCols = 1024, kNumel = kRows * kCols;

// Sets the bytes counter: `per_elem` bytes moved per element per iteration.
void count_bytes(benchmark::State& state, double per_elem) {
  state.SetBytesProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * per_elem * kNumel));
}

// A (kRows, kCols) float32 tensor of uniform [-1, 1) values (shifted by `shift`).
Tensor random_tensor(unsigned seed, float shift = 0) {
  auto v = random_vec<float>(kNumel, seed);
  Tensor t = autograd::empty({kRows, kCols});
  float* p = t.data<float>();
  for (int64_t i = 0; i < kNumel; ++i) p[i] = v[static_cast<size_t>(i)] + shift;
  return t;
}

// The module's forward alone (training mode: the graph is recorded as in a training step, then
// dropped with y). x does not require grad.
void module_forward(benchmark::State& state, nn::Module& m) {
  m.train();
  const Tensor x = random_tensor(1, 0.5f);
  for (auto _ : state) {
    Tensor y = m(x);
    benchmark::DoNotOptimize(y.data<float>());
  }
  count_bytes(state, 8);
}

// Forward and backward with the upstream gradient g; x requires grad. As PyTorch's side: x.grad is
// reset to None before each step (so dx becomes x.grad), the parameters' grads are zeroed in place.
void module_forward_backward(benchmark::State& state, nn::Module& m, double bytes_per_elem) {
  m.train();
  const Tensor x = random_tensor(1, 0.5f), g = random_tensor(2);
  x.requires_grad_();
  for (auto _ : state) {
    x.set_grad(Tensor());
    m.zero_grad();
    Tensor y = m(x);
    y.backward(g);
    benchmark::DoNotOptimize(x.grad().data<float>());
  }
  count_bytes(state, bytes_per_elem);
}

void layernorm_forward(benchmark::State& state) {
  nn::LayerNorm ln({kCols});
  module_forward(state, ln);
}
void layernorm_forward_backward(benchmark::State& state) {
  nn::LayerNorm ln({kCols});
  module_forward_backward(state, ln, 8 + 12);
}
void batchnorm_forward(benchmark::State& state) {
  nn::BatchNorm1d bn(kCols);
  module_forward(state, bn);
}
void batchnorm_forward_backward(benchmark::State& state) {
  nn::BatchNorm1d bn(kCols);
  module_forward_backward(state, bn, 8 + 20);
}

// ---- Kernel-only rows: preallocated outputs, no autograd ----------------------------------------

// Tensors (Highway's allocator staggers their offsets, so x and y do not alias in 4 KiB pages as
// two page-aligned buffers would) of random x, dy and outputs; gamma = 1, beta = 0.
struct Buffers {
  Tensor xt = random_tensor(1, 0.5f), dyt = random_tensor(2), yt = autograd::empty({kRows, kCols}),
         dxt = autograd::empty({kRows, kCols});
  float *x = xt.data<float>(), *dy = dyt.data<float>(), *y = yt.data<float>(), *dx = dxt.data<float>();
  std::vector<float> gamma = std::vector<float>(kCols, 1.0f), beta = std::vector<float>(kCols, 0.0f),
                     dgamma = std::vector<float>(kCols), dbeta = std::vector<float>(kCols);
};

void layernorm_forward_kernel(benchmark::State& state) {
  Buffers b;
  std::vector<float> mean(kRows), lo(kRows), rstd(kRows);
  for (auto _ : state) {
    k::layer_norm_forward(kRows, kCols, b.x, b.gamma.data(), b.beta.data(), 1e-5, b.y, mean.data(),
                          lo.data(), rstd.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 8);
}

void layernorm_backward_kernel(benchmark::State& state) {
  Buffers b;
  std::vector<float> mean(kRows), lo(kRows), rstd(kRows);
  k::layer_norm_forward(kRows, kCols, b.x, b.gamma.data(), b.beta.data(), 1e-5, b.y, mean.data(),
                        lo.data(), rstd.data());
  for (auto _ : state) {
    k::layer_norm_backward(kRows, kCols, b.dy, b.x, mean.data(), lo.data(), rstd.data(),
                           b.gamma.data(), b.dx, b.dgamma.data(), b.dbeta.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 12);
}

// Statistics and normalization, as the training forward runs them.
void batchnorm_forward_kernel(benchmark::State& state) {
  Buffers b;
  std::vector<float> mean(kCols), lo(kCols), var(kCols), rstd(kCols);
  for (auto _ : state) {
    k::batch_norm_stats(kRows, kCols, 1, b.x, mean.data(), lo.data(), var.data());
    for (int64_t c = 0; c < kCols; ++c) rstd[c] = static_cast<float>(k::ref::inv_std(var[c], 1e-5));
    k::batch_norm_normalize(kRows, kCols, 1, b.x, mean.data(), lo.data(), rstd.data(), b.gamma.data(),
                            b.beta.data(), b.y);
    benchmark::ClobberMemory();
  }
  count_bytes(state, 8);
}

void batchnorm_backward_kernel(benchmark::State& state) {
  Buffers b;
  std::vector<float> mean(kCols), lo(kCols), var(kCols), rstd(kCols);
  k::batch_norm_stats(kRows, kCols, 1, b.x, mean.data(), lo.data(), var.data());
  for (int64_t c = 0; c < kCols; ++c) rstd[c] = static_cast<float>(k::ref::inv_std(var[c], 1e-5));
  for (auto _ : state) {
    k::batch_norm_backward(kRows, kCols, 1, b.dy, b.x, mean.data(), lo.data(), rstd.data(),
                           b.gamma.data(), true, b.dx, b.dgamma.data(), b.dbeta.data());
    benchmark::ClobberMemory();
  }
  count_bytes(state, 20);
}

template <class F>
void add(const std::string& name, F f) {
  benchmark::RegisterBenchmark(name.c_str(), f)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_norms() {
  const std::string shape = " 4096x1024";
  add("layernorm forward" + shape, layernorm_forward);
  add("layernorm forward+backward" + shape, layernorm_forward_backward);
  add("batchnorm1d train forward" + shape, batchnorm_forward);
  add("batchnorm1d forward+backward" + shape, batchnorm_forward_backward);
  add("layernorm forward kernel" + shape, layernorm_forward_kernel);
  add("layernorm backward kernel" + shape, layernorm_backward_kernel);
  add("batchnorm1d train forward kernel" + shape, batchnorm_forward_kernel);
  add("batchnorm1d backward kernel" + shape, batchnorm_backward_kernel);
}

}  // namespace normlab::bench
