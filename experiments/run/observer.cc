// The observers of a training run: loss log, activation statistics, gradient norms, evaluation,
// callbacks.
#include "experiments/run/observer.h"

#include <cmath>

#include "experiments/models/archs.h"
#include "experiments/models/evaluate.h"
#include "experiments/registry/layers.h"

namespace normlab::experiments {

using autograd::Tensor;
using Clock = std::chrono::steady_clock;

namespace {

bool stats_step(const RunState& st) { return st.config.stats_every > 0 && st.step % st.config.stats_every == 0; }

class LossLog : public Observer {
 public:
  void step_end(RunState& st, const StepView& v) override {
    if (!std::isfinite(v.loss) || st.step % st.config.loss_every == 0)
      st.result.steps.push_back({st.step, st.epoch, v.lr, v.loss});
  }
};

// Mean and standard deviation (population) of a tensor's values, in double, in index order.
template <typename T>
std::pair<double, double> moments_of(const T* p, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m += p[i];
  m /= std::max<int64_t>(n, 1);
  double v = 0;
  for (int64_t i = 0; i < n; ++i) v += (p[i] - m) * (p[i] - m);
  return {m, std::sqrt(v / std::max<int64_t>(n, 1))};
}

std::pair<double, double> moments(const Tensor& t) {  // tensors are row-major contiguous
  return t.dtype() == autograd::DType::Float64 ? moments_of(t.data<double>(), t.numel())
                                               : moments_of(t.data<float>(), t.numel());
}

class ActivationStats : public Observer {
 public:
  explicit ActivationStats(RunState& st) : st_(st) {
    for (const Probe& p : st.model.probes)
      hooks_.push_back(p.module->register_forward_hook([this, &p](const nn::Module&, const Tensor&, const Tensor& y) {
        if (!active_) return;
        const auto t = Clock::now();
        const auto [mean, sd] = moments(y);
        for (const std::string& where : p.where) st_.result.activations.push_back({st_.step, p.layer, where, mean, sd});
        st_.result.stats_seconds += seconds_since(t);
      }));
  }
  ~ActivationStats() override {
    for (size_t i = 0; i < hooks_.size(); ++i) st_.model.probes[i].module->remove_forward_hook(hooks_[i]);
  }
  void step_begin(RunState& st) override { active_ = stats_step(st); }
  void step_end(RunState&, const StepView&) override { active_ = false; }

 private:
  RunState& st_;
  std::vector<int64_t> hooks_;
  bool active_ = false;
};

template <typename T>
double sum_of_squares(const T* p, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(p[i]) * p[i];
  return ss;
}

class GradNorms : public Observer {
 public:
  void after_backward(RunState& st) override {
    if (!stats_step(st)) return;
    const auto t = Clock::now();
    for (const auto& [name, w] : st.model.weights) {
      const Tensor g = w.grad();
      if (!g.defined()) continue;
      const double ss = g.dtype() == autograd::DType::Float64 ? sum_of_squares(g.data<double>(), g.numel())
                                                              : sum_of_squares(g.data<float>(), g.numel());
      st.result.grad_norms.push_back({st.step, name, std::sqrt(ss)});
    }
    st.result.stats_seconds += seconds_since(t);
  }
};

class Evaluation : public Observer {
 public:
  // Every config.eval_every steps: validation and test, without touching the training state.
  void step_end(RunState& st, const StepView& v) override {
    const TrainConfig& c = st.config;
    if (c.eval_every <= 0 || (st.step + 1) % c.eval_every != 0 || !std::isfinite(v.loss)) return;
    const auto t = Clock::now();
    nn::Sequential& net = *st.model.net;
    EvalRecord e{st.step + 1, st.epoch, NAN, NAN, NAN, NAN};
    if (st.data.validation.size() > 0) {
      const auto r = evaluate(net, st.data.validation, c.eval_batch);
      e.val_loss = r.loss, e.val_acc = r.score;
    }
    const auto r = evaluate(net, st.data.test, c.eval_batch);
    e.test_loss = r.loss, e.test_acc = r.score;
    st.result.evals.push_back(e);
    st.result.eval_seconds += seconds_since(t);
  }
  void epoch_end(RunState& st, EpochRecord& e) override {
    const TrainConfig& c = st.config;
    RunResult& r = st.result;
    nn::Sequential& net = *st.model.net;
    auto t = Clock::now();
    const bool now = c.eval_last <= 0 || st.epoch > c.epochs - c.eval_last;
    e.val_loss = e.val_acc = e.test_loss = e.test_acc = NAN;
    if (now && st.data.validation.size() > 0) {
      const auto v = evaluate(net, st.data.validation, c.eval_batch);
      e.val_loss = v.loss, e.val_acc = v.score;
    }
    if (now) {
      const auto te = evaluate(net, st.data.test, c.eval_batch);
      e.test_loss = te.loss, e.test_acc = te.score;
    }
    r.eval_seconds += seconds_since(t);
    if (now && !std::isfinite(e.test_loss)) {  // the weights blew up without a NaN training loss
      r.diverged = true;
      r.diverged_step = st.step;
    }
    // BatchNorm's other two evaluations at the same points as the test evaluation.
    if (now && c.bn_three_ways && norm(c.model.norm).batch_statistics && !r.diverged) {
      t = Clock::now();
      e.test_acc_precise = precise_bn_accuracy(net, st.data, c.batch_size, c.precise_bn_samples, c.seed + 7919,
                                               c.eval_batch);
      e.test_acc_batch = batch_stats_accuracy(net, st.data, c.batch_size);
      r.bn_eval_seconds += seconds_since(t);
    }
  }
};

// The sum of squares of time step s's inputs in a (B, T x I) row-major gradient, in double, in
// index order: sum_i sum_j g[i, s I + j]^2.
template <typename T>
double step_square_sum(const T* g, int64_t b, int64_t steps, int64_t features, int64_t s) {
  double sum = 0;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < features; ++j) {
      const double v = g[(i * steps + s) * features + j];
      sum += v * v;
    }
  return sum;
}

class InputGradNorms : public Observer {
 public:
  void step_begin(RunState& st) override {
    const ArchEntry& a = arch(st.config.model.arch);
    st.input_grad = a.time_steps && stats_step(st);
    if (st.input_grad) steps_ = a.time_steps(st.config.model);
  }
  void after_backward(RunState& st) override {
    if (!st.input_grad) return;
    const auto t = Clock::now();
    const Tensor g = st.input.grad();  // (B, T x I), step t's inputs in columns [t I, (t + 1) I)
    const int64_t b = g.size(0), T = steps_.first;
    for (int64_t s = 0; s < T; ++s) {
      const double sum = g.dtype() == autograd::DType::Float64 ? step_square_sum(g.data<double>(), b, T, steps_.second, s)
                                                              : step_square_sum(g.data<float>(), b, T, steps_.second, s);
      st.result.input_grads.push_back({st.step, s + 1, std::sqrt(double(b) * sum)});
    }
    st.result.stats_seconds += seconds_since(t);
  }
  void step_end(RunState& st, const StepView&) override { st.input_grad = false, st.input = Tensor(); }

 private:
  std::pair<int64_t, int64_t> steps_;  // time steps T and features per step I
};

class Callbacks : public Observer {
 public:
  Callbacks(StepCallback s, EpochCallback e) : on_step_(std::move(s)), on_epoch_(std::move(e)) {}
  void step_end(RunState& st, const StepView& v) override {
    if (on_step_ && std::isfinite(v.loss)) on_step_(st.step + 1, st.total);
  }
  void epoch_end(RunState&, EpochRecord& e) override {
    if (on_epoch_) on_epoch_(e);
  }

 private:
  StepCallback on_step_;
  EpochCallback on_epoch_;
};

}  // namespace

std::unique_ptr<Observer> loss_log() { return std::make_unique<LossLog>(); }
std::unique_ptr<Observer> activation_stats(RunState& st) { return std::make_unique<ActivationStats>(st); }
std::unique_ptr<Observer> grad_norms() { return std::make_unique<GradNorms>(); }
std::unique_ptr<Observer> input_grad_norms() { return std::make_unique<InputGradNorms>(); }
std::unique_ptr<Observer> evaluation() { return std::make_unique<Evaluation>(); }
std::unique_ptr<Observer> callbacks(StepCallback on_step, EpochCallback on_epoch) {
  return std::make_unique<Callbacks>(std::move(on_step), std::move(on_epoch));
}

}  // namespace normlab::experiments
