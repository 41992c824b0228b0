// Second-order benchmarks: a gradient-penalty step (loss + 0.1 ||d loss / d x||^2 through a
// create_graph backward, then backward and an SGD step) and a Hessian-vector product of the loss
// with respect to every parameter, for the MLP 784-256-256-10 at batch 128 and the study's CNN at
// batch 32, without a norm, with BatchNorm and with LayerNorm. bench/pytorch_bench.py times the
// same work under the same names.
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

experiments::ModelSpec spec_of(const std::string& arch, const std::string& norm) {
  experiments::ModelSpec spec;
  if (arch == "cnn") {
    spec.arch = "cnn", spec.inputs = 784, spec.image = {1, 28, 28}, spec.outputs = 10;
  } else {
    spec.inputs = 784, spec.hidden = {256, 256}, spec.outputs = 10;
  }
  spec.norm = norm;
  return spec;
}

void second_order(benchmark::State& state, std::string arch, int64_t batch, std::string norm, bool hvp) {
  const experiments::ModelSpec spec = spec_of(arch, norm);
  autograd::Generator gen(0);
  auto model = experiments::build_model(spec, gen).net;
  model->train();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x0 = autograd::randn({batch, 784}, gen);
  std::vector<int64_t> y(static_cast<size_t>(batch));
  for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % 10);
  const std::vector<Tensor> params = model->parameters();
  std::vector<Tensor> v;
  for (const Tensor& p : params) v.push_back(autograd::randn(p.shape(), gen));
  for (auto _ : state) {
    if (hvp) {
      const std::vector<Tensor> hv =
          autograd::hvp([&](const std::vector<Tensor>&) { return autograd::cross_entropy((*model)(x0), y); }, params, v);
      benchmark::DoNotOptimize(hv[0].data<float>());
    } else {
      const Tensor x = x0.detach().requires_grad_();
      const Tensor loss = autograd::cross_entropy((*model)(x), y);
      const Tensor gx = autograd::grad({loss}, {x}, {}, {.create_graph = true})[0];
      opt.zero_grad();
      autograd::add(loss, autograd::mul(autograd::sum(autograd::mul(gx, gx)), 0.1)).backward();
      opt.step();
      benchmark::DoNotOptimize(loss.data<float>());
    }
  }
}

}  // namespace

void register_second_order() {
  struct Case { const char* arch; const char* label; int64_t batch; };
  for (const Case& c : {Case{"mlp", "mlp 784-256-256-10", 128}, Case{"cnn", "cnn", 32}})
    for (const std::string norm : {"none", "batch", "layer"})
      for (bool hvp : {false, true}) {
        const std::string name = std::string(hvp ? "hvp " : "penalty step ") + c.label + " b" +
                                 std::to_string(c.batch) + " " + norm;
        benchmark::RegisterBenchmark(name.c_str(), second_order, std::string(c.arch), c.batch, norm, hvp)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
}

}  // namespace normlab::bench
