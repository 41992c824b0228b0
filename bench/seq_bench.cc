// Sequence-model benchmarks: one Adam training step of the row-sequential Fashion-MNIST LSTM
// classifier (28 steps of 28 pixels, hidden 128, the last h into a Linear of 10 classes) with no
// norm (nn::LSTM), LayerNorm (nn::LayerNormLSTM) and recurrent BatchNorm (nn::BatchNormLSTM); the
// fused causal attention's forward + backward; one AdamW step of a small GPT (nn::GPT, 4 blocks of
// width 128) under each norm; and 64 tokens generated with its key/value cache.
// bench/pytorch_seq.py times the same work in PyTorch under the same names, with the same flop counts.
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "bench/bench.h"
#include "experiments/models/sampling.h"
#include "nn/bn_lstm.h"
#include "nn/clip_grad.h"
#include "nn/gpt.h"
#include "nn/linear.h"
#include "nn/ln_lstm.h"
#include "nn/lstm.h"
#include "nn/transformer.h"
#include "optim/adam.h"

namespace normlab::bench {

namespace {

using autograd::Tensor;

constexpr int64_t kLstmIn = 28, kLstmSteps = 28, kLstmHidden = 128, kClasses = 10;

// pytorch_seq.py's lstm_step_flops: the GEMM flops of the forward (per step and sample
// 2 4H (I + H) for the input and hidden projections, and the head's 2 H 10), three times that for
// forward + backward (dX and dW). Elementwise work (gates, norms, loss, Adam) is not counted.
double lstm_step_flops(int64_t batch) {
  const double b = static_cast<double>(batch);
  const double fwd = 2.0 * b * kLstmSteps * 4 * kLstmHidden * (kLstmIn + kLstmHidden) + 2.0 * b * kLstmHidden * kClasses;
  return 3 * fwd;
}

// The recurrent part of the classifier: x (B, 28, 28) -> the output sequence (B, 28, 128).
std::shared_ptr<nn::Module> make_lstm(const std::string& norm, autograd::Generator& gen) {
  if (norm == "none") return std::make_shared<nn::LSTM>(kLstmIn, kLstmHidden, gen, nn::LSTMOptions{.batch_first = true});
  if (norm == "layer")
    return std::make_shared<nn::LayerNormLSTM>(kLstmIn, kLstmHidden, gen, nn::LayerNormLSTMOptions{.batch_first = true});
  // Statistics per time step (slots for the 28 steps), as pytorch_seq.py's BatchNormLSTM.
  return std::make_shared<nn::BatchNormLSTM>(kLstmIn, kLstmHidden, gen,
                                             nn::BatchNormLSTMOptions{.batch_first = true, .max_steps = kLstmSteps});
}

// One training step: logits = head(lstm(x)[:, -1]) (B, 10), cross-entropy, zero_grad, backward,
// clip_grad_norm_(1.0), Adam lr 1e-3; inputs U[0, 1) (B, 28, 28) and labels drawn once.
void lstm_step(benchmark::State& state, int64_t batch, std::string norm) {
  autograd::Generator gen(0);
  auto rnn = make_lstm(norm, gen);
  nn::Linear head(kLstmHidden, kClasses, gen);
  rnn->train();
  head.train();
  std::vector<Tensor> params = rnn->parameters();
  for (const Tensor& p : head.parameters()) params.push_back(p);
  optim::Adam opt(params, {.lr = 1e-3});
  const Tensor x = autograd::rand({batch, kLstmSteps, kLstmIn}, gen);
  std::vector<int64_t> y(static_cast<size_t>(batch));
  for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % static_cast<uint64_t>(kClasses));
  for (auto _ : state) {
    const Tensor h = autograd::select((*rnn)(x), 1, -1);  // the last step's h (B, 128)
    Tensor loss = autograd::cross_entropy(head(h), y);
    opt.zero_grad();
    loss.backward();
    nn::clip_grad_norm_(params, 1.0);
    opt.step();
    benchmark::DoNotOptimize(loss.data<float>());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(lstm_step_flops(batch) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Causal scaled dot-product attention on q, k, v (16, 4, T, 32): forward, then backward from a given
// grad_output into q, k and v (gradients cleared first, so nothing accumulates). The flops are
// pytorch_seq.py's, the formula's full T x T products: 2 b h T T d each for q k^T and p v forward,
// twice that each backward (12 b h T T d), masked or not.
void attention(benchmark::State& state, int64_t t) {
  const int64_t b = 16, h = 4, d = 32;
  autograd::Generator gen(0);
  Tensor q = autograd::randn({b, h, t, d}, gen), k = autograd::randn({b, h, t, d}, gen);
  Tensor v = autograd::randn({b, h, t, d}, gen), dy = autograd::randn({b, h, t, d}, gen);
  q.requires_grad_(), k.requires_grad_(), v.requires_grad_();
  for (auto _ : state) {
    q.set_grad(Tensor()), k.set_grad(Tensor()), v.set_grad(Tensor());
    Tensor out = autograd::scaled_dot_product_attention(q, k, v, /*causal=*/true);
    out.backward(dy);
    benchmark::DoNotOptimize(out.data<float>());
  }
  const double flops = 12.0 * double(b) * double(h) * double(t) * double(t) * double(d);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

constexpr int64_t kGptLayers = 4, kGptWidth = 128, kGptHeads = 4, kGptBlock = 64, kGptBatch = 16, kGptVocab = 96;

// pytorch_seq.py's gpt_step_flops: per layer the four Linears' 2 n C (3C + C + 4C + 4C) and the
// attention's two (T, T) products 4 B T T C (full, masked or not), plus the head's 2 n C V, for
// n = B T tokens; three times that for forward + backward.
double gpt_step_flops() {
  const double n = kGptBatch * kGptBlock, c = kGptWidth;
  const double per_layer = 2.0 * n * c * (12 * c) + 4.0 * kGptBatch * kGptBlock * kGptBlock * c;
  return 3 * (kGptLayers * per_layer + 2.0 * n * c * kGptVocab);
}

// The rows' GPT: 4 pre-norm blocks of width 128 with 4 heads, block 64, vocabulary 96, `norm` throughout.
nn::GPTConfig gpt_config(nn::BlockNorm norm) {
  nn::GPTConfig c;
  c.vocab_size = kGptVocab, c.block_size = kGptBlock, c.n_layer = kGptLayers, c.n_head = kGptHeads;
  c.width = kGptWidth, c.norm = norm;
  return c;
}

// One AdamW step (lr 1e-3, betas 0.9 / 0.95, weight decay 0.1 on every parameter, clip 1.0) of the
// GPT on a batch of 16 random sequences of 64 tokens and random targets.
void gpt_step(benchmark::State& state, std::string norm) {
  autograd::Generator gen(0);
  nn::GPT model(gpt_config(nn::parse_block_norm(norm)), gen);
  model.train();
  const std::vector<Tensor> params = model.parameters();
  optim::AdamW opt(params, {.lr = 1e-3, .betas = {0.9, 0.95}, .weight_decay = 0.1});
  std::vector<int64_t> ids(kGptBatch * kGptBlock), y(kGptBatch * kGptBlock);
  for (auto& v : ids) v = static_cast<int64_t>(gen.next_u64() % kGptVocab);
  for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % kGptVocab);
  for (auto _ : state) {
    const Tensor logits = model.forward(ids, {kGptBatch, kGptBlock});  // (B, T, V)
    Tensor loss = autograd::cross_entropy(autograd::reshape(logits, {kGptBatch * kGptBlock, kGptVocab}), y);
    opt.zero_grad();
    loss.backward();
    nn::clip_grad_norm_(params, 1.0);
    opt.step();
    benchmark::DoNotOptimize(loss.data<float>());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(gpt_step_flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// 64 tokens at batch 1 from the start token 0 with the key/value cache (nn::GPTDecoder), each drawn
// at temperature 0.8 from the 10 most likely (experiments::sample_token), as pytorch_seq.py's loop.
void generate(benchmark::State& state) {
  autograd::Generator gen(0);
  nn::GPT model(gpt_config(nn::BlockNorm::Layer), gen);
  model.eval();
  const experiments::SamplingOptions sampling{.temperature = 0.8, .top_k = 10};
  for (auto _ : state) {
    autograd::Generator draw(0);
    nn::GPTDecoder decoder(model, 1);
    int64_t token = 0;
    for (int i = 0; i < 64; ++i) {
      const Tensor logits = decoder.feed({token}, 1);  // (1, V)
      token = experiments::sample_token(logits.data<float>(), kGptVocab, sampling, draw);
    }
    benchmark::DoNotOptimize(token);
  }
}

}  // namespace

void register_seq() {
  // "train step lstm 28x28 h128 b{2,32} {none,layer,batch}"
  for (int64_t batch : {2, 32})
    for (const std::string norm : {"none", "layer", "batch"}) {
      const std::string name = "train step lstm 28x28 h128 b" + std::to_string(batch) + " " + norm;
      benchmark::RegisterBenchmark(name.c_str(), lstm_step, batch, norm)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  // "attention causal b16 h4 d32 T{64,256} forward+backward"
  for (int64_t t : {64, 256}) {
    const std::string name = "attention causal b16 h4 d32 T" + std::to_string(t) + " forward+backward";
    benchmark::RegisterBenchmark(name.c_str(), attention, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
  // "train step gpt L4 C128 H4 T64 b16 {none,layer,rms,batch}"
  for (const std::string norm : {"none", "layer", "rms", "batch"}) {
    const std::string name = "train step gpt L4 C128 H4 T64 b16 " + norm;
    benchmark::RegisterBenchmark(name.c_str(), gpt_step, norm)->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("generate gpt L4 C128 kv-cache 64 tokens", generate)
      ->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace normlab::bench
