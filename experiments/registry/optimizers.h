// The optimizer and schedule registries: every optimizer and learning-rate schedule a run can train
// with, one entry each. The command line (flags, defaults, --help), the training loop, the reports
// and the records read them, so adding an optimizer is its class (optim/) plus one entry in
// optimizers.cc, or one register_optimizer() call from a program of your own (tests/experiments/
// registries_test.cc registers a toy one and trains with it).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/tensor.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"

namespace normlab::experiments {

struct TrainConfig;

// One optimizer. Its settings live in TrainConfig (lr, momentum, weight_decay, nesterov, beta1,
// beta2, eps): an entry reads those it uses and names the flags that set them.
struct OptimizerEntry {
  std::string name;     // as typed and recorded: "adamw"
  std::string display;  // for reports: "AdamW"
  // The flags only this optimizer (and others listing them) reads, e.g. {"--momentum", "--nesterov"}:
  // given with another optimizer they are a usage error.
  std::vector<std::string> flags;
  std::optional<double> default_lr;  // its peak lr when --lr is not given (none: the preset's, 0.05)
  double default_weight_decay = 0;   // its weight decay when --weight-decay is not given
  bool decoupled_weight_decay = false;  // AdamW: the decay is applied to the weights, not the gradient
  // Throws normlab::Error for settings it cannot train with (e.g. a negative lr), naming them.
  std::function<void(const TrainConfig&)> check;
  // The optimizer over params, at the config's peak lr (the schedule scales it).
  std::function<std::unique_ptr<optim::Optimizer>(const TrainConfig&, std::vector<autograd::Tensor>)> make;
  // Its own options in words, after the name and lr: " momentum 0.9", " betas (0.9, 0.999), eps 1e-08".
  std::function<std::string(const TrainConfig&)> options_text;
  // What the records and manifests add for it beside the common settings (null: nothing).
  std::function<nlohmann::json(const TrainConfig&)> json;
};

// The SGD options of a run (its peak lr; the schedule scales it).
optim::SGDOptions sgd_options(const TrainConfig& c);

// Every registered optimizer, in registration order: sgd, adam, adamw, then any added.
const std::vector<OptimizerEntry>& optimizers();
// The entry called `name`; throws normlab::Error "unknown optimizer 'x' (expected one of: ...)".
const OptimizerEntry& optimizer(const std::string& name);
// Adds an optimizer; a name that exists already is an error.
void register_optimizer(OptimizerEntry entry);

// One learning-rate schedule after the warmup.
struct ScheduleEntry {
  std::string name;                // "cosine"
  std::string help;                // "cosine annealing to 0 at the last step"
  std::vector<std::string> flags;  // the flags only it reads: {"--step-every", "--step-gamma"}
  // Throws normlab::Error for settings it cannot run with (e.g. step without an interval); may be empty.
  std::function<void(const TrainConfig&)> check;
  // The schedule over the `steps` steps after the warmup.
  std::function<optim::Schedule(const TrainConfig&, int64_t steps)> make;
};

// Every registered schedule: none, cosine, step, then any added.
const std::vector<ScheduleEntry>& schedules();
// The entry called `name`; throws normlab::Error "unknown schedule 'x' (expected one of: ...)".
const ScheduleEntry& schedule(const std::string& name);
void register_schedule(ScheduleEntry entry);

}  // namespace normlab::experiments
