// A CNN checkpoint that PyTorch rebuilds from its metadata alone: the study's CNN (experiments'
// --arch cnn) with a given norm, trained 3 SGD steps on random images (so that BatchNorm's running
// statistics are not the initial ones), saved as `normlab train` saves models (state_dict names,
// metadata: arch, layers, image shape, norm, activation), and its eval-mode logits for 3 fixed rows
// x[r, j] = sin(0.01 (r 784 + j)) written with 9 significant digits. The CTest
// examples/cnn_checkpoint_<norm> then runs `scripts/load_in_pytorch.py FILE --from-metadata
// --compare LOGITS.txt` where PyTorch is installed. With ARCH lstm, the same for the row-sequential
// LSTM classifier (--arch lstm --hidden 24,24: two layers; norm none, layer or batch).
//
// Usage: cnn_checkpoint NORM MODEL.safetensors LOGITS.txt [ARCH]
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "experiments/models/model.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace normlab;
using autograd::Tensor;

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: cnn_checkpoint NORM MODEL.safetensors LOGITS.txt [ARCH]\n");
    return 2;
  }
  try {
    experiments::ModelSpec spec;
    spec.arch = "cnn", spec.inputs = 784, spec.image = {1, 28, 28}, spec.outputs = 10, spec.norm = argv[1];
    spec.groups = 4;
    if (argc == 5) spec.arch = argv[4], spec.hidden = {24, 24};
    autograd::Generator gen(7);
    const experiments::Model m = experiments::build_model(spec, gen);
    m.net->train();
    optim::SGD opt(m.net->parameters(), {.lr = 0.01, .momentum = 0.9});
    for (int step = 0; step < 3; ++step) {
      const Tensor x = autograd::randn({16, 784}, gen);
      std::vector<int64_t> y(16);
      for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % 10);
      Tensor loss = autograd::cross_entropy((*m.net)(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    m.net->eval();
    auto metadata = experiments::checkpoint_metadata(spec);
    metadata["format"] = "pt";
    metadata["repr"] = m.net->str();
    nn::save_module(argv[2], *m.net, metadata);
    std::vector<double> rows(3 * 784);
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = std::sin(0.01 * static_cast<double>(i));
    const Tensor logits = (*m.net)(autograd::tensor(rows, {3, 784}));
    std::FILE* f = std::fopen(argv[3], "w");
    if (!f) throw Error(std::string("cannot write ") + argv[3]);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 10; ++c) std::fprintf(f, "%s%.9g", c ? " " : "", logits.at({r, c}));
      std::fputc('\n', f);
    }
    std::fclose(f);
    std::printf("%s: %s with norm %s; logits for 3 fixed rows in %s\n", argv[2], experiments::describe(spec).c_str(),
                argv[1], argv[3]);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "cnn_checkpoint: %s\n", e.what());
    return 1;
  }
}
