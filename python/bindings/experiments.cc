// normlab._normlab._experiments: the normlab command run in-process (normlab.experiments): its own
// command line parser and messages, its progress on this process's stdout, Ctrl-C as in the command
// (the first stops at the next step and the finished runs are written), without the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <string>
#include <vector>

#include "experiments/commands/cli.h"
#include "experiments/support/errors.h"
#include "experiments/support/interrupt.h"
#include "python/bindings/bindings.h"

namespace normlab::python {

namespace py = pybind11;
namespace ex = normlab::experiments;

void bind_experiments(py::module_& parent) {
  py::module_ m = parent.def_submodule("_experiments", "the normlab command in-process (use normlab.experiments)");
  // (exit status, interrupted): UsageError becomes ValueError with the command's message, any
  // other error RuntimeError.
  m.def("run_cli", [](const std::vector<std::string>& args) {
    std::vector<std::string> words = {"normlab"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    int status = 0;
    bool interrupted = false;
    std::string usage;
    {
      py::gil_scoped_release release;
      ex::clear_interrupt();
      ex::InterruptScope scope;
      try {
        status = ex::run_cli(static_cast<int>(words.size()), argv.data());
      } catch (const ex::UsageError& e) {
        usage = ex::printable(e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      interrupted = ex::interrupted();
      ex::clear_interrupt();
    }
    if (!usage.empty()) throw py::value_error(usage);
    return py::make_tuple(status, interrupted);
  }, py::arg("args"));
}

}  // namespace normlab::python
