// Fuzzes the checkpoint readers: nn::load_module into a small MLP (Linear, BatchNorm1d, ReLU,
// Linear) and optim::load_optimizer into SGD with momentum. Any input must either load or throw
// normlab::Error, and a refused load must leave the model and the optimizer bitwise unchanged.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz/input_file.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace normlab;

namespace {

std::vector<std::vector<double>> snapshot(const nn::Module& m) {
  std::vector<std::vector<double>> v;
  for (const auto& [name, t] : m.state_dict()) v.push_back(t.to_vector());
  return v;
}

nn::Sequential make_model(autograd::Generator& gen) {
  return nn::Sequential({std::make_shared<nn::Linear>(3, 4, gen), std::make_shared<nn::BatchNorm1d>(4),
                         std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(4, 2, gen)});
}

}  // namespace

// With NORMLAB_FUZZ_MAKE_SEEDS=DIR: writes a valid model and optimizer checkpoint of the harness's
// model to DIR (the seeds in fuzz/seeds/safetensors) and exits.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("NORMLAB_FUZZ_MAKE_SEEDS");
  if (!dir) return 0;
  autograd::Generator gen(0);
  nn::Sequential model = make_model(gen);
  optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  const autograd::Tensor x = autograd::randn({8, 3}, gen);
  autograd::cross_entropy(model(x), {0, 1, 0, 1, 1, 0, 0, 1}).backward();
  opt.step();
  nn::save_module(std::string(dir) + "/model.safetensors", model);
  optim::save_optimizer(std::string(dir) + "/optimizer.safetensors", opt, 1);
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::input_file(data, size, ".safetensors");
  autograd::Generator gen(0);
  nn::Sequential model = make_model(gen);
  const auto before = snapshot(model);
  try {
    nn::load_module(path, model);
  } catch (const Error&) {
    if (snapshot(model) != before) __builtin_trap();  // a refused load changed the model
  }
  optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  const double lr = opt.lr();
  try {
    optim::load_optimizer(path, opt);
  } catch (const Error&) {
    if (opt.lr() != lr || opt.steps() != 0) __builtin_trap();  // a refused load changed the optimizer
  }
  return 0;
}
