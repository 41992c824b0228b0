// The README's example: a model built from nn modules, trained with SGD on two spirals, saved as
// a safetensors checkpoint and loaded into a fresh copy that predicts the same.
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

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "spirals.safetensors";
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
  return same == spirals.size() && correct > 0.9 * spirals.size() ? 0 : 1;
}
