// Optimizer checkpoints: an optimizer's state (momentum buffers, hyper-parameters) and the
// training step in a safetensors file beside the model's (nn/checkpoint.h), for resuming training
// (the file format: serialize/training_state.h).
#pragma once
#include <cstdint>
#include <string>

#include "optim/optimizer.h"

namespace normlab::optim {

/// Writes opt.state() and the training step atomically to path.
void save_optimizer(const std::string& path, const Optimizer& opt, int64_t step);
/// Loads a file written by save_optimizer into opt (built over the same parameters) and returns the
/// step. All or nothing: on any error (corrupt file, other optimizer, mismatched buffers) opt is
/// unchanged and a normlab::Error says why.
int64_t load_optimizer(const std::string& path, Optimizer& opt);

}  // namespace normlab::optim
