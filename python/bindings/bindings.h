// The parts of the extension module normlab._normlab, each defined in its own file and called by
// PYBIND11_MODULE (module.cc), and the generator the modules draw their initial weights from.
#pragma once
#include <pybind11/pybind11.h>

#include "autograd/autograd.h"

namespace normlab::python {

/// normlab.Tensor, the ops, autograd and gradcheck (tensor.cc).
void bind_tensor(pybind11::module_& m);
/// normlab._normlab._nn: the C++ modules (Linear, the norms, LSTMs, GPT, ...), safetensors (nn.cc).
void bind_nn(pybind11::module_& m);
/// normlab._normlab._optim: SGD, Adam, AdamW and the learning-rate schedules (optim.cc).
void bind_optim(pybind11::module_& m);
/// normlab._normlab._dist: rank, world size and collectives of a data-parallel job (distributed.cc).
void bind_distributed(pybind11::module_& m);
/// normlab._normlab._experiments: the normlab command in-process (experiments.cc).
void bind_experiments(pybind11::module_& m);

/// The generator new modules draw their weights from (normlab.manual_seed re-seeds it; seed 0 at
/// import, so a script gives the same weights at every run). Used with the GIL held.
autograd::Generator& default_generator();

}  // namespace normlab::python
