// The optimization of a run's training step (step.h).
#include "experiments/run/step.h"

namespace normlab::experiments {

Optimization make_optimization(std::vector<std::unique_ptr<optim::Optimizer>> groups, const optim::Schedule& schedule,
                               std::vector<autograd::Tensor> params, double clip, bool measure_norm) {
  Optimization o;
  o.groups = std::move(groups);
  o.schedules.reserve(o.groups.size());
  for (auto& g : o.groups) o.schedules.emplace_back(*g, schedule);
  o.params = std::move(params);
  o.clip = clip;
  o.measure_norm = measure_norm;
  return o;
}

}  // namespace normlab::experiments
