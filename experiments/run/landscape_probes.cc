// The landscape probes as an observer of a classifier's run: the step measures every probe_every
// steps and the curvature at four points, recorded in the run's result.
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

class LandscapeProbes : public Observer {
 public:
  void step_begin(RunState& st) override {
    const TrainConfig& c = st.config;
    if (layers_.empty()) layers_ = param_layers(st.model);
    if (c.curvature_samples > 0) {
      if (st.step == 0) curvature(st, "init");
      else if (st.step == st.total / 4 && st.total / 4 > 0) curvature(st, "quarter");
      else if (st.step == st.total / 2 && st.total / 2 > st.total / 4) curvature(st, "half");
    }
    if (c.probe_every > 0 && st.step % c.probe_every == 0) before_.emplace(*st.model.net);
  }
  void step_end(RunState& st, const StepView& v) override {
    if (before_ && std::isfinite(v.loss)) {
      const auto t = Clock::now();
      nn::Module& net = *st.model.net;
      const data::Batch& b = v.batch;
      const BatchLoss loss = [&] { return loss_of(net(b.x), b); };
      std::vector<double> etas;
      for (double m : kMultipliers) etas.push_back(m * v.lr);
      const StepMeasures s = measure_step({net, layers_, loss}, *before_, etas);
      for (size_t i = 0; i < s.shifts.size(); ++i) {
        const LayerShift& x = s.shifts[i];
        st.result.shifts.push_back({st.step, static_cast<int>(i), x.layer, x.ics, x.relative, x.cosine});
      }
      const Landscape& l = s.landscape;
      for (size_t i = 0; i < l.points.size(); ++i)
        st.result.landscape.push_back({st.step, kMultipliers[i], l.points[i].eta, l.points[i].loss,
                                       l.points[i].grad_change, l.grad_norm, l.loss_variation, l.grad_predictiveness,
                                       l.beta_smoothness});
      st.result.stats_seconds += seconds_since(t);
    }
    before_.reset();
    if (st.config.curvature_samples > 0 && st.step + 1 == st.total && std::isfinite(v.loss)) {
      const int64_t done = st.step;
      st.step = st.total;  // the record's step: every step done
      curvature(st, "end");
      st.step = done;
    }
  }

 private:
  // The curvature of the loss of the first curvature_samples training samples, the model in
  // training mode (BatchNorm: the probe batch's statistics), as the training loss sees it.
  void curvature(RunState& st, const char* point) {
    const auto t = Clock::now();
    const TrainConfig& c = st.config;
    if (!probe_batch_) {
      const data::DataLoader loader(st.data.train, c.curvature_samples, false, 0, false);
      probe_batch_ = loader.epoch(0).batch(0);
    }
    nn::Module& net = *st.model.net;
    const data::Batch& b = *probe_batch_;
    const bool was_training = net.is_training();
    net.train();
    const Curvature k = measure_curvature(net, net.parameters(), [&] { return loss_of(net(b.x), b); },
                                          {.max_iters = c.curvature_iters, .tol = c.curvature_tol, .seed = c.seed},
                                          {.samples = c.trace_samples, .seed = c.seed + 1});
    net.train(was_training);
    st.result.curvature.push_back({st.step, point, k.top.eigenvalue, k.top.iterations, k.top.converged, k.trace.trace,
                                   k.trace.standard_error, k.trace.samples});
    st.result.stats_seconds += seconds_since(t);
  }

  std::vector<ParamLayer> layers_;
  std::optional<ModuleState> before_;
  std::optional<data::Batch> probe_batch_;
};

}  // namespace

std::unique_ptr<Observer> landscape_probes() { return std::make_unique<LandscapeProbes>(); }

}  // namespace normlab::experiments
