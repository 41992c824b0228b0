// A character GPT's checkpoint that PyTorch rebuilds from its metadata alone: nn::GPT (vocabulary
// of 11 characters, block 16, 2 layers, 2 heads, width 16) with a given norm and norm position,
// trained 3 AdamW steps on random ids (so that BatchNorm's running statistics and the weights are
// not the initial ones), saved with the metadata `normlab train --arch gpt --dataset text` writes
// (experiments/models/language_model.h lm_metadata), and its eval-mode logits for 2 fixed sequences of 12
// ids, ids[r, t] = (7 t + 5 r + 3) mod 11, one line of 11 logits per position (9 significant
// digits). The CTest examples/gpt_in_pytorch_<norm>_<position> then runs
// `scripts/load_in_pytorch.py FILE --from-metadata --compare LOGITS.txt` where PyTorch is installed.
//
// Usage: gpt_checkpoint NORM POSITION MODEL.safetensors LOGITS.txt
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "data/text.h"
#include "experiments/models/language_model.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace normlab;
using autograd::Tensor;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: gpt_checkpoint NORM POSITION MODEL.safetensors LOGITS.txt\n");
    return 2;
  }
  try {
    const int64_t V = 11, T = 12, B = 2;
    nn::GPTConfig c{.vocab_size = V, .block_size = 16, .n_layer = 2, .n_head = 2, .width = 16,
                    .norm = nn::parse_block_norm(argv[1]), .position = nn::parse_norm_position(argv[2])};
    autograd::Generator gen(7);
    nn::GPT m(c, gen);
    m.train();
    optim::AdamW opt(m.parameters(), {.lr = 1e-2, .betas = {0.9, 0.95}, .weight_decay = 0.1});
    for (int step = 0; step < 3; ++step) {
      std::vector<int64_t> x(4 * 16), y(4 * 16);
      for (auto& v : x) v = static_cast<int64_t>(gen.next_u64() % V);
      for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % V);
      Tensor loss = autograd::cross_entropy(autograd::reshape(m.forward(x, {4, 16}), {4 * 16, V}), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    m.eval();
    experiments::CharModelSpec spec{.arch = "gpt", .gpt = c, .vocab_size = V, .block_size = 16};
    auto metadata = experiments::lm_metadata(spec, data::Vocabulary::of_text(U"abcdefghijk"), "gpt_checkpoint", 0.1);
    metadata["format"] = "pt";
    metadata["repr"] = m.str();
    nn::save_module(argv[3], m, metadata);
    std::vector<int64_t> ids(B * T);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t t = 0; t < T; ++t) ids[r * T + t] = (7 * t + 5 * r + 3) % V;
    const Tensor logits = m.forward(ids, {B, T});
    std::FILE* f = std::fopen(argv[4], "w");
    if (!f) throw Error(std::string("cannot write ") + argv[4]);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t v = 0; v < V; ++v) std::fprintf(f, "%s%.9g", v ? " " : "", logits.at({r, t, v}));
        std::fputc('\n', f);
      }
    std::fclose(f);
    std::printf("%s: GPT with norm %s (%s-norm); logits for 2 fixed sequences in %s\n", argv[3], argv[1], argv[2],
                argv[4]);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "gpt_checkpoint: %s\n", e.what());
    return 1;
  }
}
