// What every study shares: the settings columns of the tidy CSVs, the manifest, config as JSON.
#include <thread>

#include "autograd/kernels/elementwise.h"
#include "autograd/parallel.h"
#include "experiments/git_commit.h"
#include "experiments/output.h"
#include "experiments/study.h"

namespace normlab::experiments {

std::vector<std::string> settings_header() {
  return {"dataset", "model", "norm", "activation", "seed", "epochs", "batch_size", "lr", "momentum",
          "weight_decay", "warmup_steps", "schedule"};
}

std::vector<std::string> settings_cells(const TrainConfig& c, const std::string& dataset) {
  return {dataset, describe(c.model), c.model.norm, c.model.activation, std::to_string(c.seed),
          std::to_string(c.epochs), std::to_string(c.batch_size), fmt(c.lr), fmt(c.momentum),
          fmt(c.weight_decay), std::to_string(c.warmup_steps), c.schedule};
}

std::vector<std::string> epoch_columns(bool validation, bool bn_columns) {
  std::vector<std::string> h{"epoch", "step", "train_loss", "train_acc"};
  if (validation) h.insert(h.end(), {"val_loss", "val_acc"});
  h.insert(h.end(), {"test_loss", "test_acc"});
  if (bn_columns) h.insert(h.end(), {"test_acc_precise", "test_acc_batch"});
  return h;
}

std::vector<std::string> epoch_cells(const EpochRecord& e, bool validation, bool bn_columns) {
  std::vector<std::string> c{std::to_string(e.epoch), std::to_string(e.step), fmt(e.train_loss), fmt(e.train_acc)};
  if (validation) c.insert(c.end(), {fmt(e.val_loss), fmt(e.val_acc)});
  c.insert(c.end(), {fmt(e.test_loss), fmt(e.test_acc)});
  if (bn_columns) c.insert(c.end(), {fmt(e.test_acc_precise), fmt(e.test_acc_batch)});
  return c;
}

nlohmann::json to_json(const TrainConfig& c) {
  return {{"model", {{"inputs", c.model.inputs}, {"hidden", c.model.hidden}, {"outputs", c.model.outputs},
                     {"activation", c.model.activation}, {"norm", c.model.norm}, {"groups", c.model.groups}}},
          {"epochs", c.epochs}, {"batch_size", c.batch_size}, {"lr", c.lr}, {"momentum", c.momentum},
          {"weight_decay", c.weight_decay}, {"nesterov", c.nesterov}, {"warmup_steps", c.warmup_steps},
          {"schedule", c.schedule}, {"step_every", c.step_every}, {"step_gamma", c.step_gamma},
          {"seed", c.seed}, {"loss_every", c.loss_every}, {"stats_every", c.stats_every},
          {"bn_three_ways", c.bn_three_ways}, {"precise_bn_samples", c.precise_bn_samples},
          {"eval_batch", c.eval_batch}};
}

nlohmann::json manifest(const StudyContext& ctx, const nlohmann::json& config, double wall_seconds) {
  nlohmann::json m;
  m["normlab"] = "0.1";
  m["command"] = ctx.command_line;
  m["git_commit"] = git_commit();
  m["highway_target"] = autograd::kernels::active_target();
  m["threads"] = autograd::num_threads();
  m["hardware_threads"] = std::thread::hardware_concurrency();
  m["dataset"] = ctx.dataset;
  m["config"] = config;
  if (!ctx.extra.is_null()) m["settings"] = ctx.extra;
  m["wall_seconds"] = wall_seconds;
  return m;
}

}  // namespace normlab::experiments
