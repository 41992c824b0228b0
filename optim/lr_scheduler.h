// Learning-rate schedules: the lr as a pure function of the step (StepLR, CosineAnnealingLR,
// LinearLR warmup, Chain), and the LRScheduler that applies one to an optimizer step by step.
//
//   SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   LRScheduler sched(opt, Chain(LinearWarmup(5, 0.1), CosineAnnealingLR(95), 5));
//   for (...) { ...; opt.step(); sched.step(); }
//
// A "step" is whatever the caller counts: call sched.step() once per batch or once per epoch.
//
// Resuming from a checkpoint (tests/optim/resume_test.cc checks it is bitwise exact): save the
// schedule's position as the step, optim::save_optimizer(path, opt, sched.last_step()); to resume,
// build the optimizer with the run's options and the scheduler on it as at the start (so that the
// base lr is the options' lr), then load:
//
//   nn::load_module(model_path, model);              // parameters and buffers
//   SGD opt(model.parameters(), options);            // lr = the base lr, as in the first run
//   LRScheduler sched(opt, schedule);                // base_lr = options.lr
//   sched.set_step(load_optimizer(path, opt));       // momentum buffers, then the saved step's lr
//
// A scheduler made after load_optimizer would take the loaded, already scheduled lr as its base.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "optim/optimizer.h"

namespace normlab::optim {

/// A learning-rate schedule: lr_at(t, base_lr) is the lr at step t = 0, 1, 2, ... for an optimizer
/// whose lr was base_lr when the schedule started. Pure (no state); cheap to copy.
class Schedule {
 public:
  using Fn = std::function<double(int64_t t, double base_lr)>;  ///< The schedule: t, base_lr -> lr.
  /// A schedule named `name` (e.g. "StepLR(step_size=30, gamma=0.1)") computing lr with fn.
  Schedule(std::string name, Fn fn);
  /// The lr at step t; throws for t < 0.
  double lr_at(int64_t t, double base_lr) const;
  /// What the schedule is, with its arguments, for logs and manifests.
  const std::string& name() const { return *name_; }

 private:
  std::shared_ptr<const std::string> name_;
  std::shared_ptr<const Fn> fn_;
};

/// Step decay (PyTorch's StepLR): base_lr * gamma^floor(t / step_size). Needs step_size >= 1, gamma > 0.
Schedule StepLR(int64_t step_size, double gamma = 0.1);
/// Cosine annealing from base_lr down to eta_min over T_max steps (PyTorch's CosineAnnealingLR, in
/// its closed form): eta_min + (base_lr - eta_min) (1 + cos(pi t / T_max)) / 2. Beyond T_max it
/// rises again (period 2 T_max), as PyTorch's. Needs T_max >= 1, eta_min >= 0.
Schedule CosineAnnealingLR(int64_t T_max, double eta_min = 0);
/// Linear change of the lr factor (PyTorch's LinearLR):
/// base_lr * (start + (end - start) * min(t, total_iters) / total_iters).
/// Needs start_factor in (0, 1], end_factor in [0, 1], total_iters >= 1.
Schedule LinearLR(double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);
/// Linear warmup from start_factor * base_lr at step 0 to base_lr at step `steps`, then base_lr:
/// LinearLR(start_factor, 1, steps).
Schedule LinearWarmup(int64_t steps, double start_factor);
/// `first` for t < milestone, then `then` started afresh at 0: then.lr_at(t - milestone) (PyTorch's
/// SequentialLR([first, then], milestones=[milestone])). Chains nest: Chain(Chain(a, b, 5), c, 50).
/// Needs milestone >= 1.
Schedule Chain(Schedule first, Schedule then, int64_t milestone);

/// The constant schedule: base_lr at every step.
Schedule Constant();
/// Linear warmup that reaches base_lr at its last step (the warmup of the large-batch recipe of Goyal
/// and others, 2017): base_lr * (t + 1) / steps for t < steps, then base_lr. Unlike LinearWarmup, its
/// first lr is base_lr / steps and step steps - 1 already trains at base_lr. Needs steps >= 1.
Schedule Warmup(int64_t steps);

/// Applies a schedule to an optimizer: remembers the optimizer's lr as the base lr and sets the
/// optimizer's lr to the schedule's value at the current step.
class LRScheduler {
 public:
  /// Starts at step 0: base_lr = opt.lr(), and opt's lr becomes lr_at(0) (such as the warmup's first
  /// lr). The optimizer must outlive the scheduler.
  LRScheduler(Optimizer& opt, Schedule schedule);
  /// Advances one step and sets the optimizer's lr to lr_at(last_step()).
  void step();
  /// Jumps to step t >= 0 (as when resuming from a checkpoint, see above) and sets the optimizer's lr.
  void set_step(int64_t t);
  /// The lr of step t under this scheduler's base lr (pure).
  double lr_at(int64_t t) const { return schedule_.lr_at(t, base_lr_); }
  /// The current step (0 after construction).
  int64_t last_step() const { return t_; }
  /// The optimizer's lr when the scheduler was made.
  double base_lr() const { return base_lr_; }
  /// The schedule this scheduler applies.
  const Schedule& schedule() const { return schedule_; }

 private:
  Optimizer& opt_;
  Schedule schedule_;
  double base_lr_;
  int64_t t_ = 0;
};

}  // namespace normlab::optim
