// Learning-rate schedules (closed forms of PyTorch's schedulers) and the LRScheduler driver.
#include "optim/lr_scheduler.h"

#include <cmath>
#include <numbers>

#include "base/format.h"

namespace normlab::optim {

Schedule::Schedule(std::string name, Fn fn)
    : name_(std::make_shared<const std::string>(std::move(name))), fn_(std::make_shared<const Fn>(std::move(fn))) {}

double Schedule::lr_at(int64_t t, double base_lr) const {
  check(t >= 0, *name_ + ": the step must be >= 0, got " + std::to_string(t));
  return (*fn_)(t, base_lr);
}

Schedule StepLR(int64_t step_size, double gamma) {
  check(step_size >= 1, "StepLR: step_size must be >= 1, got " + std::to_string(step_size));
  check(std::isfinite(gamma) && gamma > 0, "StepLR: gamma must be a finite number > 0, got " + base::py_float(gamma));
  return Schedule("StepLR(step_size=" + std::to_string(step_size) + ", gamma=" + base::py_float(gamma) + ")",
                  [=](int64_t t, double base) { return base * std::pow(gamma, static_cast<double>(t / step_size)); });
}

Schedule CosineAnnealingLR(int64_t T_max, double eta_min) {
  check(T_max >= 1, "CosineAnnealingLR: T_max must be >= 1, got " + std::to_string(T_max));
  check(std::isfinite(eta_min) && eta_min >= 0,
        "CosineAnnealingLR: eta_min must be a finite number >= 0, got " + base::py_float(eta_min));
  return Schedule("CosineAnnealingLR(T_max=" + std::to_string(T_max) + ", eta_min=" + base::py_float(eta_min) + ")",
                  [=](int64_t t, double base) {
                    const double c = std::cos(std::numbers::pi * static_cast<double>(t) / static_cast<double>(T_max));
                    return eta_min + (base - eta_min) * (1 + c) / 2;
                  });
}

Schedule LinearLR(double start_factor, double end_factor, int64_t total_iters) {
  check(std::isfinite(start_factor) && start_factor > 0 && start_factor <= 1,
        "LinearLR: start_factor must be in (0, 1], got " + base::py_float(start_factor));
  check(std::isfinite(end_factor) && end_factor >= 0 && end_factor <= 1,
        "LinearLR: end_factor must be in [0, 1], got " + base::py_float(end_factor));
  check(total_iters >= 1, "LinearLR: total_iters must be >= 1, got " + std::to_string(total_iters));
  return Schedule("LinearLR(start_factor=" + base::py_float(start_factor) + ", end_factor=" + base::py_float(end_factor) +
                      ", total_iters=" + std::to_string(total_iters) + ")",
                  [=](int64_t t, double base) {
                    const double done = static_cast<double>(std::min(t, total_iters)) / static_cast<double>(total_iters);
                    return base * (start_factor + (end_factor - start_factor) * done);
                  });
}

Schedule LinearWarmup(int64_t steps, double start_factor) {
  check(steps >= 1, "LinearWarmup: steps must be >= 1, got " + std::to_string(steps));
  check(std::isfinite(start_factor) && start_factor > 0 && start_factor <= 1,
        "LinearWarmup: start_factor must be in (0, 1], got " + base::py_float(start_factor));
  return LinearLR(start_factor, 1.0, steps);
}

Schedule Chain(Schedule first, Schedule then, int64_t milestone) {
  check(milestone >= 1, "Chain: milestone (the step where the second schedule starts) must be >= 1, got " +
                            std::to_string(milestone));
  std::string name = "Chain(" + first.name() + ", " + then.name() + ", milestone=" + std::to_string(milestone) + ")";
  return Schedule(std::move(name), [first = std::move(first), then = std::move(then), milestone](int64_t t, double base) {
    return t < milestone ? first.lr_at(t, base) : then.lr_at(t - milestone, base);
  });
}

Schedule Constant() {
  return Schedule("Constant", [](int64_t, double base) { return base; });
}

Schedule Warmup(int64_t steps) {
  check(steps >= 1, "Warmup: steps must be >= 1, got " + std::to_string(steps));
  return Schedule("Warmup(steps=" + std::to_string(steps) + ")", [=](int64_t t, double base) {
    return t < steps ? base * static_cast<double>(t + 1) / static_cast<double>(steps) : base;
  });
}

LRScheduler::LRScheduler(Optimizer& opt, Schedule schedule)
    : opt_(opt), schedule_(std::move(schedule)), base_lr_(opt.lr()) {
  opt_.set_lr(lr_at(0));
}

void LRScheduler::step() { set_step(t_ + 1); }

void LRScheduler::set_step(int64_t t) {
  check(t >= 0, "LRScheduler.set_step: the step must be >= 0, got " + std::to_string(t));
  opt_.set_lr(lr_at(t));  // first, so that a bad lr leaves the step count as it was
  t_ = t;
}

}  // namespace normlab::optim
