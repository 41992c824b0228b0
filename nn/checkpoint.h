// Checkpoints as safetensors files: a module's state_dict (PyTorch's names, loadable by PyTorch
// users) and a training state (optimizer tensors, optimizer scalars and the step) for resuming.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "nn/module.h"
#include "nn/safetensors.h"

namespace normlab::nn {

// Writes m.state_dict() (parameters and buffers, PyTorch's dotted names, num_batches_tracked as
// I64) atomically to path. metadata gets "format": "pt" (as Hugging Face writes for PyTorch
// weights) unless it sets "format" itself.
void save_module(const std::string& path, const Module& m,
                 const std::map<std::string, std::string>& metadata = {});

// Loads a file written by save_module (or by PyTorch) into m, all or nothing: the file is fully
// validated and its names and shapes checked against m's state_dict before anything is copied,
// so on any error (a corrupt file, a missing, unexpected or wrongly shaped tensor) m is unchanged.
// Values are converted to each tensor's dtype (an F64 or I64 entry into a float32 buffer).
void load_module(const std::string& path, Module& m);

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

}  // namespace normlab::nn
