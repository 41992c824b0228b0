// Scaling of the training step: one SGD step of an MLP against the batch size
// (784-256-256-10, batch 1..1024) and against the hidden width (784-W-W-10, W 32..2048, batch 128),
// without a norm. The rate is the step's matrix-product work over its time, so a falling GFLOP/s
// shows where small sizes lose efficiency (per-op overhead, memory-bound products).
// bench/pytorch_bench.py times the same steps in PyTorch under the same names.
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "bench/bench.h"
#include "experiments/models/model.h"
#include "optim/sgd.h"

namespace normlab::bench {

namespace {

using autograd::Tensor;

// Matrix-product flops of one training step of MLP `widths` at batch B: forward 2 B in out per
// Linear, backward dW 2 B in out per Linear and dX 2 B in out per Linear except the first (the
// input needs no gradient). Elementwise work (bias, ReLU, loss, SGD) is not counted.
double step_flops(const std::vector<int64_t>& widths, int64_t batch) {
  double f = 0;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    const double w = 2.0 * double(batch) * double(widths[i]) * double(widths[i + 1]);
    f += (i == 0 ? 2 : 3) * w;
  }
  return f;
}

// One step (forward, cross-entropy, zero_grad, backward, SGD lr 0.01 momentum 0.9) of MLP `widths`
// without a norm, on random inputs and labels drawn once.
void scaling_step(benchmark::State& state, std::vector<int64_t> widths, int64_t batch) {
  experiments::ModelSpec spec;
  spec.inputs = widths.front();
  spec.hidden.assign(widths.begin() + 1, widths.end() - 1);
  spec.outputs = widths.back();
  spec.norm = "none";
  autograd::Generator gen(0);
  auto model = experiments::build_model(spec, gen).net;
  model->train();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = autograd::randn({batch, spec.inputs}, gen);
  std::vector<int64_t> y(static_cast<size_t>(batch));
  for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % static_cast<uint64_t>(spec.outputs));
  for (auto _ : state) {
    Tensor loss = autograd::cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.data<float>());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(step_flops(widths, batch) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

std::string join(const std::vector<int64_t>& w) {
  std::string s;
  for (size_t i = 0; i < w.size(); ++i) s += (i ? "-" : "") + std::to_string(w[i]);
  return s;
}

}  // namespace

void register_scaling() {
  // "scaling batch B mlp 784-256-256-10 none"
  for (int64_t b : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
    const std::vector<int64_t> w{784, 256, 256, 10};
    const std::string name = "scaling batch " + std::to_string(b) + " mlp " + join(w) + " none";
    benchmark::RegisterBenchmark(name.c_str(), scaling_step, w, b)->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
  // "scaling width W mlp 784-W-W-10 b128 none"
  for (int64_t h : {32, 64, 128, 256, 512, 1024, 2048}) {
    const std::vector<int64_t> w{784, h, h, 10};
    const std::string name = "scaling width " + std::to_string(h) + " mlp " + join(w) + " b128 none";
    benchmark::RegisterBenchmark(name.c_str(), scaling_step, w, int64_t{128})
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace normlab::bench
