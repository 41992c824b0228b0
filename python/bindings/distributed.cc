// normlab._normlab._dist: the processes of a data-parallel job (dist/) for normlab.distributed:
// joining the job, rank and world size, barrier, and the sum and broadcast of a tensor over the
// ranks (deterministic: every sum in rank order). A process not started by mpirun is rank 0 of 1.
#include <pybind11/pybind11.h>

#include <string>

#include "dist/dist.h"
#include "python/bindings/bindings.h"
#include "python/bindings/convert.h"

namespace normlab::python {

void bind_distributed(py::module_& parent) {
  py::module_ m = parent.def_submodule("_dist", "normlab's data-parallel processes (use them through "
                                                "normlab.distributed)");
  m.def("is_available", &dist::built_with_mpi, "Whether normlab was built with MPI (OpenMPI).");
  m.def("launched", &dist::launched, "Whether this process was started by mpirun or mpiexec.");
  m.def("init", [] { dist::init(); });
  m.def("rank", &dist::rank);
  m.def("world_size", &dist::world_size);
  m.def("barrier", [] {
    py::gil_scoped_release release;
    dist::barrier();
  });
  m.def("all_reduce_sum", [](const Tensor& t) {
    check_inplace(t, "all_reduce");
    py::gil_scoped_release release;
    if (t.dtype() == DType::Float32) dist::allreduce_sum(t.data<float>(), t.numel());
    else dist::allreduce_sum(t.data<double>(), t.numel());
  }, py::arg("tensor"));
  m.def("broadcast", [](const Tensor& t, int src) {
    check_inplace(t, "broadcast");
    if (src < 0 || src >= dist::world_size())
      throw py::value_error("broadcast: src " + std::to_string(src) + " is not a rank of a world of " +
                            std::to_string(dist::world_size()));
    py::gil_scoped_release release;
    if (t.dtype() == DType::Float32) dist::broadcast(t.data<float>(), t.numel(), src);
    else dist::broadcast(t.data<double>(), t.numel(), src);
  }, py::arg("tensor"), py::arg("src") = 0);
}

}  // namespace normlab::python
