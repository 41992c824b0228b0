// One training run: SGD with warmup and decay, per-step loss, per-epoch evaluation, activation
// statistics and gradient norms, divergence detection, BatchNorm evaluated three ways.
#include "experiments/trainer.h"

#include <chrono>
#include <cmath>
#include <ctime>

#include "data/loader.h"
#include "nn/batchnorm.h"
#include "nn/linear.h"
#include "optim/sgd.h"

namespace normlab::experiments {

using autograd::NoGradGuard;
using autograd::Tensor;

void validate(const TrainConfig& c, const Splits& s) {
  MlpSpec m = c.model;  // inputs and outputs come from the data
  m.inputs = s.train.features();
  m.outputs = std::max<int64_t>(s.train.num_classes, 1);
  validate(m);
  const int64_t n = s.train.size();
  if (n == 0) throw Error("the training set is empty");
  if (!s.train.is_classification()) throw Error("the experiments train classifiers: the data set has no class labels");
  if (c.batch_size <= 0) throw Error("batch size must be at least 1, got " + std::to_string(c.batch_size));
  if (c.batch_size > n)
    throw Error("batch size " + std::to_string(c.batch_size) + " is larger than the training set (" + std::to_string(n) +
                " samples)");
  if ((c.model.norm == "batch") && c.batch_size == 1)
    throw Error("BatchNorm needs more than one sample per batch to compute batch statistics "
                "(PyTorch: \"Expected more than 1 value per channel when training\"); use --batch-size 2 or more");
  if (c.epochs <= 0) throw Error("epochs must be at least 1, got " + std::to_string(c.epochs));
  if (!(c.lr >= 0) || !std::isfinite(c.lr)) throw Error("the learning rate must be a finite number >= 0");
  if (c.schedule != "none" && c.schedule != "cosine" && c.schedule != "step")
    throw Error("unknown schedule '" + c.schedule + "' (expected none, cosine or step)");
  if (c.schedule == "step" && c.step_every <= 0) throw Error("schedule 'step' needs a positive step interval");
  if (c.warmup_steps < 0) throw Error("warmup steps must be >= 0");
  if (c.eval_batch <= 0) throw Error("the evaluation batch must be at least 1");
}

int64_t steps_per_run(const TrainConfig& c, const Splits& s) {
  return c.epochs * (s.train.size() / c.batch_size);  // the last partial batch is dropped
}

double lr_at(const TrainConfig& c, int64_t t, int64_t total) {
  // Linear warmup: lr (t + 1) / warmup for t < warmup; then the schedule over the remaining steps.
  if (t < c.warmup_steps) return c.lr * double(t + 1) / double(c.warmup_steps);
  const int64_t u = t - c.warmup_steps, rest = std::max<int64_t>(1, total - c.warmup_steps);
  if (c.schedule == "cosine") return 0.5 * c.lr * (1 + std::cos(M_PI * double(u) / double(rest)));
  if (c.schedule == "step") return c.lr * std::pow(c.step_gamma, double(u / c.step_every));
  return c.lr;
}

EvalResult evaluate(nn::Module& model, const data::Dataset& d, int64_t batch) {
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  data::DataLoader loader(d, std::min(batch, d.size()), false, 0, false);
  double loss = 0;
  int64_t correct = 0;
  for (const data::Batch& b : loader.epoch(0)) {
    const Tensor logits = model(b.x);
    loss += autograd::cross_entropy(logits, b.labels).item() * b.size();
    const int64_t c = logits.size(1);
    const float* p = logits.data<float>();
    for (int64_t i = 0; i < b.size(); ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j)
        if (p[i * c + j] > p[i * c + best]) best = j;
      correct += best == b.labels[i];
    }
  }
  model.train(was_training);
  return {loss / d.size(), double(correct) / d.size()};
}

namespace {

std::vector<nn::BatchNorm*> batchnorms(nn::Sequential& model) {
  std::vector<nn::BatchNorm*> out;
  for (auto& [name, child] : model.children())
    if (auto* bn = dynamic_cast<nn::BatchNorm*>(child.get())) out.push_back(bn);
  return out;
}

// Copies of the model's buffers, to put back after an evaluation that changes them.
std::vector<Tensor> save_buffers(const nn::Module& m) {
  std::vector<Tensor> v;
  for (auto& [n, t] : m.named_buffers()) v.push_back(t.detach().clone());
  return v;
}
void restore_buffers(const nn::Module& m, const std::vector<Tensor>& saved) {
  NoGradGuard no_grad;
  size_t i = 0;
  for (auto& [n, t] : m.named_buffers()) autograd::copy_(t, saved[i++]);
}

// Precise BN (Wu & Johnson 2021): population statistics recomputed with the final weights, as the
// cumulative average of batch statistics over about `samples` training samples; then eval.
double precise_bn_accuracy(nn::Sequential& model, const TrainConfig& c, const Splits& s) {
  const auto saved = save_buffers(model);
  auto bns = batchnorms(model);
  std::vector<std::optional<double>> momenta;
  for (auto* bn : bns) {
    momenta.push_back(bn->momentum());
    bn->reset_running_stats();
    bn->set_momentum(std::nullopt);  // cumulative average
  }
  {
    NoGradGuard no_grad;
    model.train();
    const int64_t batch = std::min<int64_t>(std::max<int64_t>(c.batch_size, 200), s.train.size());
    data::DataLoader loader(s.train, batch, true, c.seed + 7919, true);
    int64_t seen = 0;
    for (const data::Batch& b : loader.epoch(0)) {
      if (seen >= c.precise_bn_samples) break;
      model(b.x);
      seen += b.size();
    }
  }
  const double acc = evaluate(model, s.test, c.eval_batch).accuracy;
  for (size_t i = 0; i < bns.size(); ++i) bns[i]->set_momentum(momenta[i]);
  restore_buffers(model, saved);
  return acc;
}

// Accuracy with each test batch normalized by its own statistics (batches of the training batch
// size; a trailing batch of one sample is left out, as BatchNorm cannot normalize it).
double batch_stats_accuracy(nn::Sequential& model, const TrainConfig& c, const Splits& s) {
  const auto saved = save_buffers(model);
  int64_t correct = 0, seen = 0;
  {
    NoGradGuard no_grad;
    model.train();
    data::DataLoader loader(s.test, std::min(c.batch_size, s.test.size()), false, 0, false);
    for (const data::Batch& b : loader.epoch(0)) {
      if (b.size() < 2) continue;
      const Tensor logits = model(b.x);
      const int64_t k = logits.size(1);
      const float* p = logits.data<float>();
      for (int64_t i = 0; i < b.size(); ++i) {
        int64_t best = 0;
        for (int64_t j = 1; j < k; ++j)
          if (p[i * k + j] > p[i * k + best]) best = j;
        correct += best == b.labels[i];
      }
      seen += b.size();
    }
  }
  restore_buffers(model, saved);
  return seen ? double(correct) / seen : NAN;
}

// Mean and standard deviation (population) of a tensor's values, in double.
std::pair<double, double> moments(const Tensor& t) {
  const float* p = t.data<float>();
  const int64_t n = t.numel();
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m += p[i];
  m /= std::max<int64_t>(n, 1);
  double v = 0;
  for (int64_t i = 0; i < n; ++i) v += (p[i] - m) * (p[i] - m);
  return {m, std::sqrt(v / std::max<int64_t>(n, 1))};
}

}  // namespace

RunResult train_run(const TrainConfig& config, const Splits& s, const StepCallback& on_step,
                    const EpochCallback& on_epoch) {
  validate(config, s);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  RunResult r;
  r.config = config;
  TrainConfig& c = r.config;
  c.model.inputs = s.train.features();
  c.model.outputs = s.train.num_classes;
  autograd::Generator gen(c.seed);
  r.model = build_mlp(c.model, gen);
  nn::Sequential& model = *r.model;
  optim::SGDOptions o;
  o.lr = c.lr, o.momentum = c.momentum, o.weight_decay = c.weight_decay, o.nesterov = c.nesterov;
  optim::SGD opt(model.parameters(), o);
  data::DataLoader loader(s.train, c.batch_size, true, c.seed, true);
  const int64_t per_epoch = loader.num_batches(), total = c.epochs * per_epoch;
  r.total_steps = total;
  const auto named = model.named_parameters();
  int64_t step = 0;
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  for (int64_t epoch = 1; epoch <= c.epochs && !r.diverged; ++epoch) {
    model.train();
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    const data::Epoch batches = loader.epoch(epoch - 1);
    for (int64_t bi = 0; bi < batches.size(); ++bi) {
      auto t = Clock::now();
      const data::Batch b = batches.batch(bi);
      r.data_seconds += since(t);
      t = Clock::now();
      const double lr = lr_at(c, step, total);
      opt.set_lr(lr);
      const bool stats = c.stats_every > 0 && step % c.stats_every == 0;
      double stats_time = 0;
      // Forward, layer by layer so that hidden activations can be measured.
      Tensor h = b.x;
      int layer = 0;
      const auto& kids = model.children();
      for (size_t i = 0; i < kids.size(); ++i) {
        h = (*kids[i].second)(h);
        if (!stats || i + 1 == kids.size()) continue;
        const auto ts = Clock::now();
        const nn::Module* m = kids[i].second.get();
        const bool is_linear = dynamic_cast<const nn::Linear*>(m) != nullptr;
        auto [mu, sd] = moments(h);
        if (is_linear) {
          r.activations.push_back({step, layer, "pre", mu, sd});
          if (c.model.norm == "none") r.activations.push_back({step, layer, "post", mu, sd});
        } else if (i + 1 < kids.size() && dynamic_cast<const nn::Linear*>(kids[i + 1].second.get())) {
          r.activations.push_back({step, layer++, "act", mu, sd});  // the activation closes the layer
        } else {
          r.activations.push_back({step, layer, "post", mu, sd});
        }
        stats_time += since(ts);
      }
      Tensor loss = autograd::cross_entropy(h, b.labels);
      const double lv = loss.item();
      if (!std::isfinite(lv)) {
        r.diverged = true;
        r.diverged_step = step;
        r.steps.push_back({step, epoch, lr, lv});
        break;
      }
      opt.zero_grad();
      loss.backward();
      if (stats) {
        const auto ts = Clock::now();
        for (auto& [name, p] : named)
          if (name.size() > 6 && name.compare(name.size() - 6, 6, "weight") == 0 && p.grad().defined() && p.dim() == 2) {
            const auto g = p.grad();
            const float* gp = g.data<float>();
            double ss = 0;
            for (int64_t i = 0; i < g.numel(); ++i) ss += double(gp[i]) * gp[i];
            r.grad_norms.push_back({step, name, std::sqrt(ss)});
          }
        stats_time += since(ts);
      }
      opt.step();
      r.step_seconds += since(t) - stats_time;
      r.stats_seconds += stats_time;
      if (step % c.loss_every == 0) r.steps.push_back({step, epoch, lr, lv});
      {  // running training accuracy over the epoch
        const int64_t k = h.size(1);
        const float* p = h.data<float>();
        for (int64_t i = 0; i < b.size(); ++i) {
          int64_t best = 0;
          for (int64_t j = 1; j < k; ++j)
            if (p[i * k + j] > p[i * k + best]) best = j;
          correct += best == b.labels[i];
        }
      }
      loss_sum += lv * b.size();
      seen += b.size();
      ++step;
      if (on_step) on_step(step, total);
    }
    if (r.diverged) break;
    EpochRecord e{};
    e.epoch = epoch, e.step = step;
    e.train_loss = loss_sum / std::max<int64_t>(seen, 1);
    e.train_acc = double(correct) / std::max<int64_t>(seen, 1);
    auto t = Clock::now();
    const bool eval_now = c.eval_last <= 0 || epoch > c.epochs - c.eval_last;
    e.val_loss = e.val_acc = e.test_loss = e.test_acc = NAN;
    if (eval_now && s.validation.size() > 0) {
      const auto v = evaluate(model, s.validation, c.eval_batch);
      e.val_loss = v.loss, e.val_acc = v.accuracy;
    }
    if (eval_now) {
      const auto te = evaluate(model, s.test, c.eval_batch);
      e.test_loss = te.loss, e.test_acc = te.accuracy;
    }
    r.eval_seconds += since(t);
    if (eval_now && !std::isfinite(e.test_loss)) {  // the weights blew up without a NaN training loss
      r.diverged = true;
      r.diverged_step = step;
    }
    if (c.bn_three_ways && c.model.norm == "batch" && epoch + 3 > c.epochs && !r.diverged) {
      t = Clock::now();
      e.test_acc_precise = precise_bn_accuracy(model, c, s);
      e.test_acc_batch = batch_stats_accuracy(model, c, s);
      r.bn_eval_seconds += since(t);
    }
    r.epochs.push_back(e);
    if (on_epoch) on_epoch(e);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return r;
}

}  // namespace normlab::experiments
