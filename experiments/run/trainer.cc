// One training run: a loop over train_step, with observers for everything that is recorded.
#include "experiments/run/trainer.h"

#include <cmath>
#include <ctime>
#include <functional>
#include <optional>
#include <sstream>

#include "autograd/loss.h"
#include "data/loader.h"
#include "dist/dist.h"
#include "experiments/models/evaluate.h"
#include "experiments/records/records.h"
#include "experiments/registry/layers.h"
#include "experiments/registry/optimizers.h"
#include "experiments/run/checkpointing.h"
#include "experiments/run/ddp.h"
#include "experiments/run/observer.h"
#include "experiments/run/loop.h"
#include "experiments/run/step.h"
#include "experiments/support/interrupt.h"
#include "nn/checkpoint.h"
#include "optim/checkpoint.h"

namespace normlab::experiments {

using autograd::Tensor;
using Clock = std::chrono::steady_clock;

void validate(const TrainConfig& c, const Splits& s) {
  ModelSpec m = c.model;  // inputs and outputs come from the data
  m.inputs = s.train.features();
  m.outputs = std::max<int64_t>(s.train.num_classes, 1);
  validate(m);
  const int64_t n = s.train.size();
  if (n == 0) throw Error("the training set is empty");
  if ((c.task == data::Task::Regression) == s.train.is_classification())
    throw Error(s.train.is_classification() ? "the task is regression, but the data set has class labels"
                                            : "the data set has regression targets: --task regression");
  if (c.batch_size <= 0) throw Error("batch size must be at least 1, got " + std::to_string(c.batch_size));
  if (norm(c.model.norm).batch_statistics && n == 1)
    throw Error(norm(c.model.norm).display + " needs more than one sample per batch, and the training set has one "
                "sample: give more data, or --norm none/layer/group");
  if (norm(c.model.norm).batch_statistics && c.batch_size == 1)
    throw Error(norm(c.model.norm).display + " needs more than one sample per batch to compute batch statistics "
                "(PyTorch: \"Expected more than 1 value per channel when training\"); use --batch-size 2 or more");
  if (c.epochs <= 0) throw Error("epochs must be at least 1, got " + std::to_string(c.epochs));
  if (!(c.lr >= 0) || !std::isfinite(c.lr)) throw Error("the learning rate must be a finite number >= 0");
  const ScheduleEntry& sched = schedule(c.schedule);  // throws for an unknown name
  if (sched.check) sched.check(c);
  if (c.warmup_steps < 0) throw Error("warmup steps must be >= 0");
  if (c.eval_batch <= 0) throw Error("the evaluation batch must be at least 1");
  if (c.eval_every < 0) throw Error("--eval-every must be 0 (off) or a number of steps");
  if (c.probe_every < 0) throw Error("--probe-every must be 0 (off) or a number of steps");
  if (c.curvature_samples < 0) throw Error("--curvature-samples must be 0 (off) or a number of training samples");
  if (c.curvature_samples > n)
    throw Error("--curvature-samples " + std::to_string(c.curvature_samples) + " is more than the training set's " +
                std::to_string(n) + " samples");
  if (c.curvature_samples > 0 && (c.curvature_iters < 1 || !(c.curvature_tol > 0) || c.trace_samples < 1))
    throw Error("the curvature needs at least one power iteration, a tolerance above 0 and at least one trace sample");
  if (c.distributed && (c.probe_every > 0 || c.curvature_samples > 0))
    throw Error("the landscape probes (--probe-every, --curvature-samples) measure one process's model: not with "
                "--distributed");
  if (c.early_stopping < 0) throw Error("--early-stopping must be 0 (off) or a number of epochs");
  if (c.early_stopping > 0 && s.validation.size() == 0)
    throw Error("--early-stopping watches the validation loss, and there is no validation set: give --val-fraction "
                "above 0 (e.g. 0.1)");
  if (c.early_stopping > 0 && c.eval_last > 0)
    throw Error("--early-stopping needs the validation loss after every epoch (not only the last ones)");
  const int ranks = c.ranks > 0 ? c.ranks : dist::world_size();
  if (c.distributed && c.batch_size % ranks != 0)
    throw Error("--batch-size " + std::to_string(c.batch_size) + " is the global batch, split over " +
                std::to_string(ranks) + " ranks: give a multiple of " + std::to_string(ranks));
  if (c.distributed && norm(c.model.norm).batch_statistics && !norm(c.model.norm).synchronized && c.batch_size == ranks)
    throw Error(norm(c.model.norm).display + " with each rank's own statistics needs more than one sample per rank "
                "(PyTorch: \"Expected more than 1 value per channel when training\"): --batch-size " +
                std::to_string(c.batch_size) + " over " + std::to_string(ranks) +
                " ranks leaves one; give a multiple of the ranks of at least " + std::to_string(2 * ranks) +
                ", or --norm syncbatch");
  if (c.distributed && c.batch_size < n && n / c.batch_size == 0)
    throw Error("the training set is smaller than one global batch");
  const OptimizerEntry& opt = optimizer(c.optimizer);  // throws for an unknown name
  if (opt.check) opt.check(c);
  schedule_of(c, steps_per_run(c, s));  // throws for a bad decay factor
}

CheckedRun check_run(TrainConfig config, const Splits& data) {
  validate(config, data);
  return CheckedRun(std::move(config));
}

bool drops_last_batch(const TrainConfig& c, int64_t n) {
  if (n >= 4 * c.batch_size || c.distributed) return true;
  return norm(c.model.norm).batch_statistics && n % c.batch_size == 1;
}

std::string last_batch_note(const TrainConfig& c, int64_t n) {
  if (n >= 4 * c.batch_size || !drops_last_batch(c, n)) return "";
  return "The training set's last batch of one sample is left out of every epoch: " + norm(c.model.norm).display +
         " cannot normalize a batch of one.";
}

int64_t steps_per_run(const TrainConfig& c, const Splits& s) { return steps_per_run(c, s.train.size()); }

int64_t steps_per_run(const TrainConfig& c, int64_t n) {
  if (c.batch_size <= 0) return 0;  // invalid: validate() says why
  return c.epochs * (drops_last_batch(c, n) ? n / c.batch_size : (n + c.batch_size - 1) / c.batch_size);
}

optim::Schedule schedule_of(const TrainConfig& c, int64_t total) {
  const int64_t w = c.warmup_steps;
  const optim::Schedule after = schedule(c.schedule).make(c, total - w);
  return w > 0 ? optim::Chain(optim::Warmup(w), after, w) : after;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<Tensor> params) {
  return optimizer(c.optimizer).make(c, std::move(params));
}

std::string optimizer_text(const TrainConfig& c, bool with_lr) {
  const OptimizerEntry& o = optimizer(c.optimizer);
  std::ostringstream s;
  s.precision(6);
  s << o.display;
  if (with_lr) s << " lr " << c.lr << ",";
  if (o.options_text) s << o.options_text(c);
  if (c.weight_decay > 0 || o.decoupled_weight_decay)
    s << ", weight decay " << c.weight_decay << (o.decoupled_weight_decay ? " (decoupled)" : "");
  if (c.clip_grad_norm > 0) s << ", gradient norm clipped to " << c.clip_grad_norm;
  return s.str();
}

namespace {

// Ctrl-C: asked on this rank, or (data-parallel) on any rank, so that every rank stops at the same step.
bool stop_on_any_rank(bool distributed) {
  if (!distributed) return interrupted();
  double any = interrupted() ? 1 : 0;
  dist::allreduce_sum(&any, 1);
  return any > 0;
}

// The epoch's training score over every rank's slices (data-parallel), or this process's.
double epoch_score(const ScoreMeter& mine, bool distributed) {
  if (!distributed) return mine.value();
  double sums[5] = {double(mine.correct), double(mine.seen), mine.sse, mine.sum_y, mine.sum_y2};
  dist::allreduce_sum(sums, 5);
  ScoreMeter all = mine;
  all.correct = static_cast<int64_t>(sums[0]), all.seen = static_cast<int64_t>(sums[1]);
  all.sse = sums[2], all.sum_y = sums[3], all.sum_y2 = sums[4];
  return all.value();
}

// The classifiers' task of train_step (step.h): the network's forward pass on a batch of the
// loader and loss_of, the observers called at each point, the epoch's running metrics. A
// data-parallel step takes rank 0's running statistics before the forward pass (as DDP does) and
// averages the gradients over the ranks.
struct ClassifierStep {
  using Batch = data::Batch;
  struct Forward {
    Tensor loss, logits;
  };
  RunState& st;
  Observers& obs;
  RunPosition& meter;
  const std::vector<Tensor>& params;

  void step_begin() {
    for (auto& o : obs) o->step_begin(st);
  }
  Forward forward(const data::Batch& b) {
    if (st.config.distributed) broadcast_buffers(*st.model.net);
    st.input = st.input_grad ? b.x.detach() : b.x;
    if (st.input_grad) st.input.requires_grad_();
    Tensor logits = (*st.model.net)(st.input);
    return {loss_of(logits, b), logits};
  }
  double loss_value(const Forward& f) const {
    double lv = f.loss.item();
    if (st.config.distributed) {  // the global batch's loss (equal slices: the mean of the ranks' means), the same on every rank
      dist::allreduce_sum(&lv, 1);
      lv /= dist::world_size();
    }
    return lv;
  }
  void after_backward() {
    if (st.config.distributed) average_gradients(params);
    for (auto& o : obs) o->after_backward(st);  // the gradient norms recorded are the unclipped ones
  }
  void step_end(const data::Batch& b, const Forward& f, const StepOutcome& s) {
    if (std::isfinite(s.loss)) {
      meter.score.add(f.logits, b);
      meter.loss_sum += s.loss * b.size();
    }
    const StepView view{s.lr, s.loss, b, f.logits};
    for (auto& o : obs) o->step_end(st, view);
  }
};

// Early stopping: the epoch with the lowest validation loss so far and a copy of its weights.
class BestEpoch {
 public:
  // Notes the epoch just evaluated; true when `patience` epochs have passed without a lower
  // validation loss (the run stops).
  bool stop_after(const EpochRecord& e, const nn::Module& net, int64_t patience) {
    if (e.val_loss < loss_) {
      loss_ = e.val_loss, epoch_ = e.epoch;
      weights_.clear();
      for (const auto& [name, t] : net.state_dict()) weights_.emplace_back(name, t.clone());
    }
    return e.epoch - epoch_ >= patience;
  }
  // Puts the best epoch's weights back (if one was noted) and returns that epoch (0: none).
  int64_t restore(nn::Module& net) const {
    if (epoch_ > 0) net.load_state_dict(weights_);
    return epoch_;
  }

 private:
  int64_t epoch_ = 0;
  double loss_ = INFINITY;
  autograd::NamedTensors weights_;
};

// A classifier's run as run_loop drives it (loop.h): epochs of the loader's batches (each rank's
// slice of them, data-parallel), the timing of its steps, each epoch's record and evaluations (the
// observers), early stopping and the checkpoints after every control.checkpoint_every epochs.
struct ClassifierRun {
  using Task = ClassifierStep;
  RunState& st;
  Observers& obs;
  RunPosition& pos;  // the loop's position, with the epoch's running metrics
  const data::DataLoader& loader;
  ClassifierStep step;
  BestEpoch& best;
  const RunControl& control;
  const std::function<void(const RunPosition&)>& checkpoint;
  std::optional<data::Epoch> order{};
  Clock::time_point step_start{};
  double stats_before = 0;

  Task& task() { return step; }
  int64_t epochs() const { return st.config.epochs; }
  int64_t batches() const { return loader.num_batches(); }
  void epoch_begin(const LoopPosition& p) {
    st.epoch = p.epoch;
    if (p.batch == 0) pos.loss_sum = 0, pos.score = ScoreMeter();  // a new epoch's metrics
    st.result.model->train();
    order.emplace(loader.epoch(p.epoch - 1));
  }
  data::Batch batch(const LoopPosition& p) {
    const auto t = Clock::now();
    data::Batch b = st.config.distributed ? shard(order->batch(p.batch)) : order->batch(p.batch);
    st.result.data_seconds += seconds_since(t);
    step_start = Clock::now();
    stats_before = st.result.stats_seconds;
    return b;
  }
  void step_done(const LoopPosition& p) {
    st.result.step_seconds += seconds_since(step_start) - (st.result.stats_seconds - stats_before);
    st.step = p.step;
  }
  bool stop_asked(const LoopPosition&) const { return stop_on_any_rank(st.config.distributed); }
  bool epoch_end(const LoopPosition& p) {
    RunResult& r = st.result;
    EpochRecord e{};
    e.epoch = p.epoch, e.step = p.step;
    e.train_loss = pos.loss_sum / std::max<int64_t>(pos.score.seen, 1);
    e.train_acc = epoch_score(pos.score, st.config.distributed);
    for (auto& o : obs) o->epoch_end(st, e);
    r.epochs.push_back(e);
    if (r.diverged) return true;
    if (st.config.early_stopping > 0 && best.stop_after(e, *st.model.net, st.config.early_stopping)) {
      r.stopped_early = p.epoch < st.config.epochs;
      return true;
    }
    if (control.checkpoint_every > 0 && p.epoch % control.checkpoint_every == 0 && !control.checkpoint_dir.empty()) {
      RunPosition next;  // the next epoch's start
      next.epoch = p.epoch + 1, next.step = p.step;
      checkpoint(next);
    }
    return false;
  }
};

// Continues r from the checkpoint in dir: the records, the weights, the optimizer and schedule;
// returns the position. Throws if the checkpoint was made with another config or data.
RunPosition resume_from(const std::filesystem::path& dir, RunResult& r, nn::Module& net, optim::Optimizer& opt,
                        optim::LRScheduler& sched) {
  const Checkpoint ck = read_checkpoint(dir);
  const nlohmann::json was = ck.records.value("config", nlohmann::json()), now = to_json(r.config);
  if (was != now) {
    std::string diff;
    const auto text = [](const nlohmann::json& j, const std::string& k) { return j.contains(k) ? j[k].dump() : "unset"; };
    nlohmann::json keys = now;
    keys.update(was.is_object() ? was : nlohmann::json::object());  // every key of either
    for (const auto& [k, v] : keys.items())
      if (text(was, k) != text(now, k))
        diff += (diff.empty() ? "" : ", ") + k + " " + text(was, k) + " then, " + text(now, k) + " now";
    throw Error("--resume: the checkpoint in " + dir.string() + " is of a run with other settings (" +
                (diff.empty() ? "other keys" : diff) + "): resume with the flags it was made with");
  }
  if (ck.records.value("total_steps", int64_t(-1)) != r.total_steps)
    throw Error("--resume: the checkpoint in " + dir.string() + " is of a run of " +
                ck.records.value("total_steps", nlohmann::json()).dump() + " steps, this one has " +
                std::to_string(r.total_steps) + ": the data differ");
  std::optional<RunResult> kept = stored_run(ck.records, r.config);
  if (!kept) throw Error("--resume: " + (dir / "state.json").string() + ": its records are damaged");
  r.steps = std::move(kept->steps), r.epochs = std::move(kept->epochs);
  r.activations = std::move(kept->activations), r.grad_norms = std::move(kept->grad_norms);
  r.evals = std::move(kept->evals);
  r.shifts = std::move(kept->shifts), r.landscape = std::move(kept->landscape), r.curvature = std::move(kept->curvature);
  nn::load_module(ck.model.string(), net);
  sched.set_step(optim::load_optimizer(ck.optimizer.string(), opt));
  return ck.position;
}

// The run's model with its initial weights: seeded, or --init-from's; data-parallel, every rank
// checks it has the same settings and data, then takes rank 0's weights. Sets c's inputs and outputs.
Model initial_model(TrainConfig& c, const Splits& s) {
  c.model.inputs = s.train.features();
  c.model.outputs = s.train.is_classification() ? s.train.num_classes : 1;
  autograd::Generator gen(c.seed);
  Model model = build_model(c.model, gen);
  if (!c.init_from.empty()) nn::load_module(c.init_from, *model.net);
  if (c.distributed) {
    check_same_settings(to_json(c).dump() + ", " + std::to_string(s.train.size()) + " training and " +
                        std::to_string(s.test.size()) + " test samples");
    broadcast_state(*model.net);
  }
  return model;
}

}  // namespace

RunResult train_run(const TrainConfig& config, const Splits& s, const StepCallback& on_step,
                    const EpochCallback& on_epoch, const RunControl& control) {
  return train_run(check_run(config, s), s, on_step, on_epoch, control);
}

RunResult train_run(const CheckedRun& run, const Splits& s, const StepCallback& on_step,
                    const EpochCallback& on_epoch, const RunControl& control) {
  const TrainConfig& config = run.config();
  const auto t0 = Clock::now();
  const std::clock_t cpu0 = std::clock();
  RunResult r;
  r.config = config;
  TrainConfig& c = r.config;
  Model model = initial_model(c, s);
  r.model = model.net;
  std::vector<std::unique_ptr<optim::Optimizer>> groups;
  groups.push_back(make_optimizer(c, model.net->parameters()));
  data::DataLoader loader(s.train, c.batch_size, true, c.seed, drops_last_batch(c, s.train.size()));
  r.total_steps = c.epochs * loader.num_batches();
  r.train_samples = s.train.size();
  Optimization opt = make_optimization(std::move(groups), schedule_of(c, r.total_steps), model.net->parameters(),
                                       c.clip_grad_norm, /*measure_norm=*/false);
  RunState st{c, s, model, r, r.total_steps};
  RunPosition pos;
  if (!control.resume.empty()) pos = resume_from(control.resume, r, *model.net, *opt.groups[0], opt.schedules[0]);
  st.step = pos.step;
  const std::function<void(const RunPosition&)> checkpoint = [&](const RunPosition& at) {
    write_checkpoint(control.checkpoint_dir, r, *opt.groups[0], opt.schedules[0].last_step(), at);
  };
  BestEpoch best;  // early stopping
  {
    Observers obs;
    obs.push_back(loss_log());
    obs.push_back(activation_stats(st));
    obs.push_back(landscape_probes());  // after activation_stats: its hooks are off when the probes run
    obs.push_back(grad_norms());
    obs.push_back(input_grad_norms());
    obs.push_back(evaluation());
    obs.push_back(callbacks(on_step, on_epoch));
    ClassifierRun run{st, obs, pos, loader, {st, obs, pos, opt.params}, best, control, checkpoint};
    const LoopEnd end = run_loop(run, opt, pos);
    if (end == LoopEnd::Diverged) {
      r.diverged = true;
      r.diverged_step = pos.step;
    } else if (end == LoopEnd::Interrupted) {
      r.interrupted = true;
      if (!control.checkpoint_dir.empty()) checkpoint(pos);  // resumable from this step
    }
  }
  if (c.early_stopping > 0 && !r.diverged) r.best_epoch = best.restore(*model.net);
  r.seconds = seconds_since(t0);
  r.cpu_seconds = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return r;
}

}  // namespace normlab::experiments
