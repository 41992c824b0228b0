// The Python module normlab._normlab (pybind11): tensors from and to NumPy, the ops, autograd
// (tensor.cc), the modules (nn.cc) and the optimizers (optim.cc). normlab's errors become Python
// exceptions (RuntimeError, or IndexError, TypeError and ValueError where PyTorch raises those); no
// input from Python crashes the process.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <string>

#include "autograd/parallel.h"
#include "base/error.h"
#include "python/bindings/bindings.h"

namespace py = pybind11;

namespace normlab::python {

autograd::Generator& default_generator() {
  static autograd::Generator gen(0);
  return gen;
}

}  // namespace normlab::python

PYBIND11_MODULE(_normlab, m) {
  m.doc() = "normlab's C++ core: tensors, ops, autograd, modules and optimizers";
  // normlab::Error (bad input in normlab's words) becomes a RuntimeError, as PyTorch's errors are.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const normlab::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const py::cast_error& e) {
      // An argument of a type the function does not take (pybind11 says RuntimeError).
      PyErr_SetString(PyExc_TypeError, (std::string("wrong argument type: ") + e.what()).c_str());
    }
  });
  m.def("manual_seed", [](uint64_t seed) { normlab::python::default_generator().seed(seed); }, py::arg("seed"),
        "Re-seeds the generator new modules draw their initial weights from (seed 0 at import).");
  m.def("set_num_threads", [](int n) { normlab::autograd::set_num_threads(n); }, py::arg("n"),
        "The worker threads of normlab's kernels (torch.set_num_threads); results do not depend on it.");
  m.def("get_num_threads", &normlab::autograd::num_threads, "The worker threads of normlab's kernels.");
  normlab::python::bind_tensor(m);
  normlab::python::bind_nn(m);
  normlab::python::bind_optim(m);
  normlab::python::bind_distributed(m);
  normlab::python::bind_experiments(m);
}
