// Evaluating a model: loss and accuracy, and BatchNorm's precise and test-batch evaluations.
#include "experiments/models/evaluate.h"

#include <cmath>
#include <optional>

#include "autograd/allocator.h"
#include "autograd/loss.h"
#include "data/loader.h"
#include "nn/batchnorm.h"
#include "nn/bn_lstm.h"
#include "nn/noisy_batchnorm.h"

namespace normlab::experiments {

using autograd::NoGradGuard;
using autograd::Tensor;

namespace {

// Empties the allocator's cache when an evaluation starts and when it ends: the buffers cached for
// training steps and those of evaluation batches (100 MB per layer of a CNN at batch 1000) are then
// never held at once, so the peak memory is the larger of the two, not their sum.
class CacheTrim {
 public:
  CacheTrim() { autograd::empty_cache(); }
  ~CacheTrim() { autograd::empty_cache(); }
  CacheTrim(const CacheTrim&) = delete;
  CacheTrim& operator=(const CacheTrim&) = delete;
};

}  // namespace

int64_t count_correct(const Tensor& logits, const std::vector<int64_t>& labels) {
  const int64_t rows = logits.size(0), k = logits.size(1);
  const float* p = logits.data<float>();
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
      if (p[i * k + j] > p[i * k + best]) best = j;
    correct += best == labels[i];
  }
  return correct;
}

Tensor loss_of(const Tensor& out, const data::Batch& b) {
  return b.labels.empty() ? autograd::mse_loss(out, b.y) : autograd::cross_entropy(out, b.labels);
}

void ScoreMeter::add(const Tensor& out, const data::Batch& b) {
  seen += b.size();
  regression = b.labels.empty();
  if (!b.labels.empty()) {
    correct += count_correct(out, b.labels);
    return;
  }
  const float* p = out.data<float>();
  const float* y = b.y.data<float>();
  for (int64_t i = 0; i < b.size(); ++i) {
    const double e = double(p[i]) - y[i];
    sse += e * e, sum_y += y[i], sum_y2 += double(y[i]) * y[i];
  }
}

double ScoreMeter::value() const {
  if (seen == 0) return NAN;
  if (!regression) return double(correct) / seen;
  const double sst = sum_y2 - sum_y * sum_y / seen;
  return sst > 0 ? 1.0 - sse / sst : NAN;
}

EvalResult evaluate(nn::Module& model, const data::Dataset& d, int64_t batch) {
  CacheTrim trim;
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  data::DataLoader loader(d, std::min(batch, d.size()), false, 0, false);
  double loss = 0;
  ScoreMeter score;
  for (const data::Batch& b : loader.epoch(0)) {
    const Tensor out = model(b.x);
    loss += loss_of(out, b).item() * b.size();
    score.add(out, b);
  }
  model.train(was_training);
  return {loss / d.size(), score.value()};
}

namespace {

std::vector<nn::BatchNorm*> batchnorms(nn::Sequential& model) {
  std::vector<nn::BatchNorm*> out;
  for (auto& [name, child] : model.children())
    if (auto* bn = dynamic_cast<nn::BatchNorm*>(child.get())) out.push_back(bn);
  return out;
}

// The recurrent BatchNorm cells among the model's layers (the lstm arch's batch and batch-shared).
std::vector<nn::BatchNormLSTM*> recurrent_batchnorms(nn::Sequential& model) {
  std::vector<nn::BatchNormLSTM*> out;
  for (auto& [name, child] : model.children())
    if (auto* bn = dynamic_cast<nn::BatchNormLSTM*>(child.get())) out.push_back(bn);
  return out;
}

// Copies of the model's buffers, put back when the evaluation that changes them is done.
class SavedBuffers {
 public:
  explicit SavedBuffers(const nn::Module& m) : m_(m) {
    for (auto& [n, t] : m.named_buffers()) saved_.push_back(t.detach().clone());
  }
  ~SavedBuffers() {
    NoGradGuard no_grad;
    size_t i = 0;
    for (auto& [n, t] : m_.named_buffers()) autograd::copy_(t, saved_[i++]);
  }

 private:
  const nn::Module& m_;
  std::vector<Tensor> saved_;
};

}  // namespace

double precise_bn_accuracy(nn::Sequential& model, const data::Splits& s, int64_t batch, int64_t samples,
                           uint64_t seed, int64_t eval_batch) {
  CacheTrim trim;
  const SavedBuffers saved(model);
  auto bns = batchnorms(model);
  std::vector<std::optional<double>> momenta;
  for (auto* bn : bns) {
    momenta.push_back(bn->momentum());
    bn->reset_running_stats();
    bn->set_momentum(std::nullopt);  // cumulative average
  }
  const auto cells = recurrent_batchnorms(model);
  for (auto* cell : cells) cell->reset_running_stats(), cell->set_cumulative_statistics(true);
  {
    NoGradGuard no_grad;
    model.train();
    data::DataLoader loader(s.train, std::min<int64_t>(std::max<int64_t>(batch, 200), s.train.size()), true, seed,
                            true);
    int64_t seen = 0;
    for (const data::Batch& b : loader.epoch(0)) {
      if (seen >= samples) break;
      model(b.x);
      seen += b.size();
    }
  }
  for (auto* cell : cells) cell->set_cumulative_statistics(false);
  const double acc = evaluate(model, s.test, eval_batch).score;
  for (size_t i = 0; i < bns.size(); ++i) bns[i]->set_momentum(momenta[i]);
  return acc;
}

namespace {

// A noisy BatchNorm's noise turned off while it lives (evaluation: BatchNorm's, without noise).
class QuietNoise {
 public:
  explicit QuietNoise(nn::Sequential& model) {
    for (nn::BatchNorm* bn : batchnorms(model))
      if (auto* noisy = dynamic_cast<nn::NoisyBatchNorm*>(bn); noisy && noisy->noise_enabled())
        noisy->set_noise_enabled(false), quiet_.push_back(noisy);
  }
  ~QuietNoise() {
    for (nn::NoisyBatchNorm* n : quiet_) n->set_noise_enabled(true);
  }

 private:
  std::vector<nn::NoisyBatchNorm*> quiet_;
};

}  // namespace

double batch_stats_accuracy(nn::Sequential& model, const data::Splits& s, int64_t batch) {
  CacheTrim trim;
  const SavedBuffers saved(model);
  const QuietNoise quiet(model);
  ScoreMeter score;
  NoGradGuard no_grad;
  model.train();
  data::DataLoader loader(s.test, std::min(batch, s.test.size()), false, 0, false);
  for (const data::Batch& b : loader.epoch(0)) {
    if (b.size() < 2) continue;
    score.add(model(b.x), b);
  }
  return score.value();
}

}  // namespace normlab::experiments
