// The README's example: a model built from nn modules, trained with SGD on two spirals, saved as
// a safetensors checkpoint (and the optimizer's state beside it) and loaded into a fresh copy that
// predicts the same. It prints the copy's logits for three fixed inputs, the inputs for which
// scripts/load_in_pytorch.py prints PyTorch's logits from the same file, in the same format.
//
// Usage: train_and_save [MODEL.safetensors [OPTIM.safetensors [LOGITS.txt]]]
// LOGITS.txt, if given, receives those logits with 9 significant digits, one row per line, for
// `load_in_pytorch.py MODEL.safetensors --compare LOGITS.txt` (the CTest examples/load_in_pytorch).
#include <cstdio>

#include "data/loader.h"
#include "data/synthetic.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace normlab;
using autograd::Tensor;

// MLP 2-64-64-2 with LayerNorm in the hidden layers; the seed fixes the initialization.
std::shared_ptr<nn::Sequential> make_model(uint64_t seed) {
  autograd::Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Linear>(2, 64, gen));
  model->add(std::make_shared<nn::LayerNorm>(autograd::Shape{64}));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(64, 64, gen));
  model->add(std::make_shared<nn::LayerNorm>(autograd::Shape{64}));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(64, 2, gen));
  return model;
}

// The inputs whose logits both this program and scripts/load_in_pytorch.py print: (3, 2).
const std::vector<double> kProbe = {0.5, -0.2, -0.7, 0.1, 0.0, 0.9};

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "spirals.safetensors";
  const std::string optim_path = argc > 2 ? argv[2] : "optim.safetensors";
  const std::string logits_path = argc > 3 ? argv[3] : "";
  data::Dataset spirals = data::make_spirals(/*n=*/1000, /*noise=*/0.05, /*seed=*/0);
  auto model = make_model(0);
  std::printf("%s\n", model->str().c_str());

  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::LRScheduler sched(opt, optim::CosineAnnealingLR(/*T_max=*/60 * 32));
  data::DataLoader loader(spirals, /*batch_size=*/32, /*shuffle=*/true, /*seed=*/0, /*drop_last=*/true);
  for (int epoch = 0; epoch < 60; ++epoch) {
    double total = 0;
    for (const data::Batch& b : loader.epoch(epoch)) {
      Tensor loss = autograd::cross_entropy((*model)(b.x), b.labels);
      opt.zero_grad();
      loss.backward();
      opt.step();
      sched.step();
      total += loss.item();
    }
    if (epoch % 10 == 9) std::printf("epoch %2d  loss %.4f\n", epoch + 1, total / loader.num_batches());
  }

  model->eval();
  nn::save_module(path, *model);       // PyTorch's state_dict names: "0.weight", "1.bias", ...
  optim::save_optimizer(optim_path, opt, sched.last_step());  // momentum buffers + step, to resume
  auto copy = make_model(1);           // different initial weights
  nn::load_module(path, *copy);        // checks every name and shape, all or nothing
  copy->eval();
  autograd::NoGradGuard no_grad;
  const Tensor a = (*model)(spirals.x), b = (*copy)(spirals.x);
  int64_t correct = 0, same = 0;
  for (int64_t i = 0; i < spirals.size(); ++i) {
    const bool pred = a.at({i, 1}) > a.at({i, 0});
    correct += pred == (spirals.labels[i] == 1);
    same += a.at({i, 0}) == b.at({i, 0}) && a.at({i, 1}) == b.at({i, 1});
  }
  std::printf("training accuracy %.1f%%; the loaded copy gives identical logits for %lld of %lld points\n",
              100.0 * correct / spirals.size(), static_cast<long long>(same), static_cast<long long>(spirals.size()));
  const Tensor probe = (*copy)(autograd::tensor(kProbe, {3, 2}));  // (3, 2) logits
  std::printf("logits of the loaded copy for x = [[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]]:\n");
  for (int64_t i = 0; i < 3; ++i) std::printf("%12.7f %12.7f\n", probe.at({i, 0}), probe.at({i, 1}));
  if (!logits_path.empty()) {
    std::FILE* f = std::fopen(logits_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", logits_path.c_str());
      return 1;
    }
    for (int64_t i = 0; i < 3; ++i) std::fprintf(f, "%.9g %.9g\n", probe.at({i, 0}), probe.at({i, 1}));
    std::fclose(f);
  }
  return same == spirals.size() && correct > 0.9 * spirals.size() ? 0 : 1;
}
