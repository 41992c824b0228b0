// Model checkpoints as safetensors files: a module's state_dict (PyTorch's names, loadable by
// PyTorch users). The optimizer's training state is in serialize/training_state.h.
#pragma once
#include <map>
#include <string>

#include "nn/module.h"
#include "serialize/safetensors.h"

namespace normlab::nn {

/// Writes m.state_dict() (parameters and buffers, PyTorch's dotted names, num_batches_tracked as
/// I64) atomically to path. metadata gets "format": "pt" (as Hugging Face writes for PyTorch
/// weights) unless it sets "format" itself.
void save_module(const std::string& path, const Module& m,
                 const std::map<std::string, std::string>& metadata = {});

/// Loads a file written by save_module (or by PyTorch) into m, all or nothing. The file is fully
/// validated and its names and shapes checked against m's state_dict before anything is copied,
/// so on any error (a corrupt file, a missing, unexpected or wrongly shaped tensor) m is unchanged.
/// Values are converted to each tensor's dtype (an F64 or I64 entry into a float32 buffer).
void load_module(const std::string& path, Module& m);
/// The same from a file read already (serialize::load_safetensors(path)).
void load_module(const serialize::SafetensorsFile& file, const std::string& path, Module& m);

}  // namespace normlab::nn
