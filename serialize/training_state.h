// Training states as safetensors files: an optimizer's tensors (e.g. momentum buffers) and
// scalars, the training step and free-form metadata, for resuming a run (optim/checkpoint.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "serialize/safetensors.h"

namespace normlab::serialize {

// What save_training_state stores: an optimizer's tensors (e.g. momentum buffers) and scalars
// (optim's OptimizerState::tensors / ::scalars), the training step, and any extra metadata.
struct TrainingState {
  NamedTensors optimizer_tensors;
  std::map<std::string, double> scalars;
  int64_t step = 0;
  std::map<std::string, std::string> metadata;
};

// Writes a training state atomically to path: the tensors as safetensors tensors; the step and
// each scalar as "__metadata__" strings ("step", "scalar.<name>" printed with "%.17g", so doubles
// read back bitwise equal), with "normlab.kind": "training_state". Extra metadata keys must not
// collide with those.
void save_training_state(const std::string& path, const NamedTensors& optimizer_tensors,
                         const std::map<std::string, double>& scalars, int64_t step,
                         const std::map<std::string, std::string>& metadata = {});

// Reads a file written by save_training_state; throws normlab::Error naming the file if it is
// corrupt or not a training state (e.g. a model checkpoint), or if a scalar or the step is malformed.
TrainingState load_training_state(const std::string& path);

}  // namespace normlab::serialize
