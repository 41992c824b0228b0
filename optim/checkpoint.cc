// Optimizer checkpoints, stored as training states (serialize/training_state.h).
#include "optim/checkpoint.h"

#include "serialize/training_state.h"

namespace normlab::optim {

void save_optimizer(const std::string& path, const Optimizer& opt, int64_t step) {
  const OptimizerState s = opt.state();
  serialize::save_training_state(path, s.tensors, s.scalars, step);
}

int64_t load_optimizer(const std::string& path, Optimizer& opt) {
  serialize::TrainingState t = serialize::load_training_state(path);
  OptimizerState s;
  s.tensors = std::move(t.optimizer_tensors);
  s.scalars = std::move(t.scalars);
  try {
    opt.load_state(s);  // checks everything before it changes anything
  } catch (const Error& e) {
    throw Error("load_optimizer '" + path + "': " + e.what());
  }
  return t.step;
}

}  // namespace normlab::optim
