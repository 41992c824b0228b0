// normlab._normlab._optim: the C++ optimizers behind normlab.optim (SGD, Adam, AdamW with
// PyTorch's arguments and defaults), their checkpointable state, and the learning-rate schedules
// (StepLR, CosineAnnealingLR, LinearLR, SequentialLR) applied step by step. step() runs without the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "optim/optim.h"
#include "python/bindings/bindings.h"
#include "python/bindings/convert.h"

namespace normlab::python {

namespace {

using optim::Optimizer;

std::array<double, 2> betas_of(const std::pair<double, double>& b) { return {b.first, b.second}; }

}  // namespace

void bind_optim(py::module_& parent) {
  py::module_ m = parent.def_submodule("_optim", "normlab's C++ optimizers (use them through normlab.optim)");

  py::class_<Optimizer, std::shared_ptr<Optimizer>>(m, "NativeOptimizer", "A C++ optimizer (normlab::optim::Optimizer).")
      .def("step", [](Optimizer& self) {
        py::gil_scoped_release release;
        self.step();
      })
      .def("zero_grad", &Optimizer::zero_grad)
      .def_property("lr", &Optimizer::lr, &Optimizer::set_lr)
      .def_property_readonly("steps", &Optimizer::steps)
      .def("parameters", &Optimizer::parameters)
      // (tensors, scalars): copies of the per-parameter state ("exp_avg.0", ...) and the numbers
      // ("lr", "step", the hyper-parameters).
      .def("state", [](const Optimizer& self) {
        const optim::OptimizerState s = self.state();
        return py::make_tuple(s.tensors, s.scalars);
      })
      .def("load_state", [](Optimizer& self, const NamedTensors& tensors, const std::map<std::string, double>& scalars) {
        optim::OptimizerState s;
        s.tensors = tensors, s.scalars = scalars;
        self.load_state(s);
      }, py::arg("tensors"), py::arg("scalars"));

  m.def("sgd", [](std::vector<Tensor> params, double lr, double momentum, double dampening, double weight_decay,
                  bool nesterov, bool maximize) -> std::shared_ptr<Optimizer> {
    optim::SGDOptions o;
    o.lr = lr, o.momentum = momentum, o.dampening = dampening, o.weight_decay = weight_decay;
    o.nesterov = nesterov, o.maximize = maximize;
    return std::make_shared<optim::SGD>(std::move(params), o);
  }, py::arg("params"), py::arg("lr"), py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
     py::arg("weight_decay") = 0.0, py::arg("nesterov") = false, py::arg("maximize") = false);
  // Adam and AdamW: the same arguments, AdamW's weight decay 1e-2 by default (PyTorch's).
  auto adam_like = [&m](const char* name, auto options, double weight_decay) {
    using Options = decltype(options);
    m.def(name, [](std::vector<Tensor> params, double lr, const std::pair<double, double>& betas, double eps,
                   double wd, bool amsgrad, bool maximize) -> std::shared_ptr<Optimizer> {
      Options o;
      o.lr = lr, o.betas = betas_of(betas), o.eps = eps, o.weight_decay = wd, o.amsgrad = amsgrad, o.maximize = maximize;
      if constexpr (std::is_same_v<Options, optim::AdamOptions>) return std::make_shared<optim::Adam>(std::move(params), o);
      else return std::make_shared<optim::AdamW>(std::move(params), o);
    }, py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999), py::arg("eps") = 1e-8,
       py::arg("weight_decay") = weight_decay, py::arg("amsgrad") = false, py::arg("maximize") = false);
  };
  adam_like("adam", optim::AdamOptions{}, 0.0);
  adam_like("adamw", optim::AdamWOptions{}, 1e-2);

  // Schedules: t, base_lr -> lr (pure), combined with sequential(); applied by LRScheduler.
  py::class_<optim::Schedule>(m, "Schedule")
      .def("lr_at", &optim::Schedule::lr_at, py::arg("step"), py::arg("base_lr"))
      .def("__repr__", &optim::Schedule::name);
  m.def("step_lr", &optim::StepLR, py::arg("step_size"), py::arg("gamma") = 0.1);
  m.def("cosine_annealing_lr", &optim::CosineAnnealingLR, py::arg("T_max"), py::arg("eta_min") = 0.0);
  m.def("linear_lr", &optim::LinearLR, py::arg("start_factor") = 1.0 / 3, py::arg("end_factor") = 1.0,
        py::arg("total_iters") = 5);
  m.def("chain", &optim::Chain, py::arg("first"), py::arg("then"), py::arg("milestone"));
  // The scheduler keeps its optimizer alive (the C++ one holds a reference to it).
  py::class_<optim::LRScheduler, std::shared_ptr<optim::LRScheduler>>(m, "LRScheduler")
      .def(py::init([](const std::shared_ptr<Optimizer>& opt, const optim::Schedule& s) {
        return std::make_shared<optim::LRScheduler>(*opt, s);
      }), py::arg("optimizer"), py::arg("schedule"), py::keep_alive<1, 2>())
      .def("step", &optim::LRScheduler::step)
      .def("set_step", &optim::LRScheduler::set_step, py::arg("step"))
      .def_property_readonly("last_step", &optim::LRScheduler::last_step)
      .def_property_readonly("base_lr", &optim::LRScheduler::base_lr);
}

}  // namespace normlab::python
