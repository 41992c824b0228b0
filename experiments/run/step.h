// One training step, the same for every family: the task's forward pass and loss, then, when the
// loss is finite, the gradients (zeroed first), the task's after-backward work (data-parallel
// averaging, gradient observers), clipping, every optimizer group's update and its schedule's
// step. A family differs in its task (its batches, forward pass, loss and records: the
// classifiers' in trainer.cc, the language models' in lm_run.cc), not in the step.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "autograd/tensor.h"
#include "nn/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace normlab::experiments {

// The optimizers of a run and how its gradients are clipped: one group (the classifiers), or
// nanoGPT's two (decayed, not decayed: the language models), each with its learning-rate schedule.
struct Optimization {
  std::vector<std::unique_ptr<optim::Optimizer>> groups;  // updated in this order
  std::vector<optim::LRScheduler> schedules;              // schedules[g] sets groups[g]'s lr
  std::vector<autograd::Tensor> params;  // every parameter, in the module's order (the clipping's sum runs over it)
  double clip = 0;                       // clip the total gradient norm (L2) to this (0: no clipping)
  bool measure_norm = false;             // measure the total norm even when not clipping (it is recorded)

  // The lr of the step about to run (every group's).
  double lr() const { return groups.front()->lr(); }
};

// The optimization of `params` by `groups` (each over its share of params), every group's lr on
// `schedule` from its own lr at step 0.
Optimization make_optimization(std::vector<std::unique_ptr<optim::Optimizer>> groups, const optim::Schedule& schedule,
                               std::vector<autograd::Tensor> params, double clip, bool measure_norm);

// What one step did: the lr it ran at, its loss (not finite: no update was made) and the total
// gradient norm before clipping (NaN when not measured).
struct StepOutcome {
  double lr = 0, loss = 0;
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
};

// A task, as train_step calls it (T::Batch its batch, T::Forward what its forward pass keeps):
//   step_begin()                      before anything of the step
//   forward(b) -> Forward             the forward pass and the loss tensor (Forward::loss)
//   loss_value(f) -> double           the loss as recorded (data-parallel: the mean over the ranks)
//   after_backward()                  after the gradients are computed, before clipping
//   step_end(b, f, outcome)           after the update (or after a non-finite loss, without one)
template <class T>
StepOutcome train_step(T& task, Optimization& o, const typename T::Batch& b) {
  task.step_begin();
  StepOutcome s;
  s.lr = o.lr();
  const typename T::Forward f = task.forward(b);
  s.loss = task.loss_value(f);
  if (std::isfinite(s.loss)) {
    for (auto& g : o.groups) g->zero_grad();
    f.loss.backward();
    task.after_backward();
    if (o.clip > 0 || o.measure_norm)
      s.grad_norm = nn::clip_grad_norm_(o.params, o.clip > 0 ? o.clip : std::numeric_limits<double>::infinity());
    for (auto& g : o.groups) g->step();
    for (auto& sc : o.schedules) sc.step();
  }
  task.step_end(b, f, s);
  return s;
}

}  // namespace normlab::experiments
