// Optimizer checkpoints, stored with nn's safetensors training-state format.
#include "optim/checkpoint.h"

#include "nn/checkpoint.h"

namespace normlab::optim {

void save_optimizer(const std::string& path, const Optimizer& opt, int64_t step) {
  const OptimizerState s = opt.state();
  nn::save_training_state(path, s.tensors, s.scalars, step);
}

int64_t load_optimizer(const std::string& path, Optimizer& opt) {
  nn::TrainingState t = nn::load_training_state(path);
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
