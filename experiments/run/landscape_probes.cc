// The landscape probes of a run (RunProbes, landscape.h), and the classifiers' observer of them:
// the step measures every probe_every steps and the curvature at four points, recorded in the
// run's result.
#include <chrono>
#include <cmath>
#include <optional>

#include "data/loader.h"
#include "experiments/models/evaluate.h"
#include "experiments/run/landscape.h"
#include "experiments/run/observer.h"

namespace normlab::experiments {

using autograd::Tensor;
using Clock = std::chrono::steady_clock;

namespace {

// The probe's step sizes along -g, as multiples of the step's learning rate.
constexpr double kMultipliers[] = {0.25, 0.5, 1, 2, 4};

}  // namespace

RunProbes::RunProbes(nn::Module& net, std::vector<ParamLayer> layers, const TrainConfig& c, int64_t total_steps,
                     BatchLoss curvature_loss)
    : net_(net), layers_(std::move(layers)), c_(c), total_(total_steps), curvature_loss_(std::move(curvature_loss)) {}

void RunProbes::step_begin(int64_t step, RunResult& r) {
  if (c_.curvature_samples > 0) {
    if (step == 0) curvature(step, "init", r);
    else if (step == total_ / 4 && total_ / 4 > 0) curvature(step, "quarter", r);
    else if (step == total_ / 2 && total_ / 2 > total_ / 4) curvature(step, "half", r);
  }
  if (c_.probe_every > 0 && step % c_.probe_every == 0) before_.emplace(net_);
}

void RunProbes::step_end(int64_t step, double lr, double loss, const BatchLoss& batch_loss, RunResult& r) {
  if (before_ && std::isfinite(loss)) {
    const auto t = Clock::now();
    std::vector<double> etas;
    for (double m : kMultipliers) etas.push_back(m * lr);
    const StepMeasures s = measure_step({net_, layers_, batch_loss}, *before_, etas);
    for (size_t i = 0; i < s.shifts.size(); ++i) {
      const LayerShift& x = s.shifts[i];
      r.shifts.push_back({step, static_cast<int>(i), x.layer, x.ics, x.relative, x.cosine});
    }
    const Landscape& l = s.landscape;
    for (size_t i = 0; i < l.points.size(); ++i)
      r.landscape.push_back({step, kMultipliers[i], l.points[i].eta, l.points[i].loss, l.points[i].grad_change,
                             l.grad_norm, l.loss_variation, l.grad_predictiveness, l.beta_smoothness});
    r.stats_seconds += seconds_since(t);
  }
  before_.reset();
  if (c_.curvature_samples > 0 && step + 1 == total_ && std::isfinite(loss))
    curvature(total_, "end", r);  // the record's step: every step done
}

// The curvature of the probe batch's loss, the model in training mode (BatchNorm: the probe
// batch's statistics), as the training loss sees it.
void RunProbes::curvature(int64_t step, const char* point, RunResult& r) {
  const auto t = Clock::now();
  const bool was_training = net_.is_training();
  net_.train();
  const Curvature k = measure_curvature(net_, net_.parameters(), curvature_loss_,
                                        {.max_iters = c_.curvature_iters, .tol = c_.curvature_tol, .seed = c_.seed},
                                        {.samples = c_.trace_samples, .seed = c_.seed + 1});
  net_.train(was_training);
  r.curvature.push_back({step, point, k.top.eigenvalue, k.top.iterations, k.top.converged, k.trace.trace,
                         k.trace.standard_error, k.trace.samples});
  r.stats_seconds += seconds_since(t);
}

namespace {

// The classifiers' observer: RunProbes on the model, the first curvature_samples training samples
// as the probe batch.
class LandscapeProbes : public Observer {
 public:
  void step_begin(RunState& st) override {
    if (!probes_) {
      nn::Module& net = *st.model.net;
      if (st.config.curvature_samples > 0) {
        const data::DataLoader loader(st.data.train, st.config.curvature_samples, false, 0, false);
        probe_batch_ = loader.epoch(0).batch(0);
      }
      probes_.emplace(net, param_layers(st.model), st.config, st.total,
                      [&net, this] { return loss_of(net(probe_batch_->x), *probe_batch_); });
    }
    probes_->step_begin(st.step, st.result);
  }
  void step_end(RunState& st, const StepView& v) override {
    nn::Module& net = *st.model.net;
    const data::Batch& b = v.batch;
    probes_->step_end(st.step, v.lr, v.loss, [&] { return loss_of(net(b.x), b); }, st.result);
  }

 private:
  std::optional<data::Batch> probe_batch_;
  std::optional<RunProbes> probes_;
};

}  // namespace

std::unique_ptr<Observer> landscape_probes() { return std::make_unique<LandscapeProbes>(); }

}  // namespace normlab::experiments
