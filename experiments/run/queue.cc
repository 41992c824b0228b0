// The run queue's pieces that are the same for every family (queue.h): how an mpirun job shares
// the runs, how many train side by side, the kernels' thread count while they do.
#include "experiments/run/queue.h"

#include <algorithm>

#include "autograd/parallel.h"
#include "base/error.h"

namespace normlab::experiments {

JobShare::JobShare(int ranks_per_run) {
  if (ranks_per_run < 1 || dist::world_size() % ranks_per_run != 0)
    throw Error("runs over " + std::to_string(ranks_per_run) + " processes each need a job of a multiple of " +
                std::to_string(ranks_per_run) + " processes, this one has " + std::to_string(dist::world_size()));
  // In an mpirun job (compare, sweep, study over several processes) each group of ranks_per_run
  // ranks trains every G-th run, from its number on; the results are gathered afterwards.
  stride = static_cast<size_t>(dist::world_size() / ranks_per_run);
  first = static_cast<size_t>(dist::rank() / ranks_per_run);
  if (dist::world_size() > 1) group.emplace(static_cast<int>(first));
  sender = dist::rank() == 0;  // in the group: its first rank
}

int queue_workers(int ranks_per_run, size_t runs) {
  return ranks_per_run > 1 ? 1 : static_cast<int>(std::min<size_t>(static_cast<size_t>(autograd::num_threads()), runs));
}

ThreadCount::ThreadCount(int n) : saved_(autograd::num_threads()) { autograd::set_num_threads(n); }
ThreadCount::~ThreadCount() { autograd::set_num_threads(saved_); }

}  // namespace normlab::experiments
