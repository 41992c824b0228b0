// The built-in optimizers (SGD, Adam, AdamW: PyTorch's update rules, optim/) and learning-rate
// schedules (none, cosine, step), one table entry each.
#include "experiments/registry/optimizers.h"

#include <sstream>

#include "experiments/config/train_config.h"
#include "experiments/registry/entries.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace normlab::experiments {

namespace {

optim::AdamOptions adam_options(const TrainConfig& c) {
  return {.lr = c.lr, .betas = {c.beta1, c.beta2}, .eps = c.eps, .weight_decay = c.weight_decay};
}

// A number as the reports print it (6 significant digits).
std::string num(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

std::string betas_text(const TrainConfig& c) {
  return " betas (" + num(c.beta1) + ", " + num(c.beta2) + "), eps " + num(c.eps);
}

nlohmann::json adam_json(const TrainConfig& c) {
  return {{"name", c.optimizer}, {"betas", {c.beta1, c.beta2}}, {"eps", c.eps}};
}

std::vector<OptimizerEntry> builtin_optimizers() {
  std::vector<OptimizerEntry> t;
  t.push_back({.name = "sgd",
               .display = "SGD",
               .flags = {"--momentum", "--nesterov"},
               .check = [](const TrainConfig& c) { optim::SGD::check_options(sgd_options(c), "SGD"); },
               .make = [](const TrainConfig& c, std::vector<autograd::Tensor> params) -> std::unique_ptr<optim::Optimizer> {
                 return std::make_unique<optim::SGD>(std::move(params), sgd_options(c));
               },
               .options_text = [](const TrainConfig& c) {
                 return " momentum " + num(c.momentum) + (c.nesterov ? " (Nesterov)" : "");
               }});
  t.push_back({.name = "adam",
               .display = "Adam",
               .flags = {"--betas", "--eps"},
               .default_lr = 1e-3,
               .check = [](const TrainConfig& c) { optim::Adam::check_options(adam_options(c), "Adam"); },
               .make = [](const TrainConfig& c, std::vector<autograd::Tensor> params) -> std::unique_ptr<optim::Optimizer> {
                 return std::make_unique<optim::Adam>(std::move(params), adam_options(c));
               },
               .options_text = betas_text,
               .json = adam_json});
  t.push_back({.name = "adamw",
               .display = "AdamW",
               .flags = {"--betas", "--eps"},
               .default_lr = 1e-3,
               .default_weight_decay = 1e-2,
               .decoupled_weight_decay = true,
               .check = [](const TrainConfig& c) { optim::Adam::check_options(adam_options(c), "AdamW"); },
               .make = [](const TrainConfig& c, std::vector<autograd::Tensor> params) -> std::unique_ptr<optim::Optimizer> {
                 return std::make_unique<optim::AdamW>(
                     std::move(params), optim::AdamWOptions{.lr = c.lr, .betas = {c.beta1, c.beta2}, .eps = c.eps,
                                                            .weight_decay = c.weight_decay});
               },
               .options_text = betas_text,
               .json = adam_json});
  return t;
}

std::vector<OptimizerEntry>& optimizer_table() {
  static std::vector<OptimizerEntry> t = builtin_optimizers();
  return t;
}

std::vector<ScheduleEntry> builtin_schedules() {
  std::vector<ScheduleEntry> t;
  t.push_back({.name = "none",
               .help = "the peak lr to the end",
               .make = [](const TrainConfig&, int64_t) -> optim::Schedule { return optim::Constant(); }});
  t.push_back({.name = "cosine",
               .help = "cosine annealing to 0 at the last step",
               .make = [](const TrainConfig&, int64_t steps) -> optim::Schedule {
                 return optim::CosineAnnealingLR(std::max<int64_t>(1, steps));
               }});
  t.push_back({.name = "step",
               .help = "times --step-gamma every --step-every steps",
               .flags = {"--step-every", "--step-gamma"},
               .check = [](const TrainConfig& c) {
                 if (c.step_every <= 0)
                   throw Error("--schedule step needs --step-every N, the steps between two decays (at least 1), got " +
                               std::to_string(c.step_every));
               },
               .make = [](const TrainConfig& c, int64_t) -> optim::Schedule {
                 return optim::StepLR(c.step_every, c.step_gamma);
               }});
  return t;
}

std::vector<ScheduleEntry>& schedule_table() {
  static std::vector<ScheduleEntry> t = builtin_schedules();
  return t;
}

}  // namespace

optim::SGDOptions sgd_options(const TrainConfig& c) {
  return {.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay, .nesterov = c.nesterov};
}

const std::vector<OptimizerEntry>& optimizers() { return optimizer_table(); }
const OptimizerEntry& optimizer(const std::string& name) { return find_entry(optimizers(), name, "optimizer"); }
void register_optimizer(OptimizerEntry entry) {
  if (entry.display.empty()) entry.display = entry.name;
  if (!entry.make) throw Error("register_optimizer: the optimizer '" + entry.name + "' needs a make function");
  add_entry(optimizer_table(), std::move(entry), "register_optimizer", "optimizer");
}

const std::vector<ScheduleEntry>& schedules() { return schedule_table(); }
const ScheduleEntry& schedule(const std::string& name) { return find_entry(schedules(), name, "schedule"); }
void register_schedule(ScheduleEntry entry) {
  if (!entry.make) throw Error("register_schedule: the schedule '" + entry.name + "' needs a make function");
  add_entry(schedule_table(), std::move(entry), "register_schedule", "schedule");
}

}  // namespace normlab::experiments
