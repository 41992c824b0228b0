// The processes of one data-parallel job (started by mpirun/mpiexec): rank, world size and the
// collectives, deterministic (every sum in rank order), over MPI when normlab is built with it.
// A process not started by mpirun is rank 0 of a world of 1 and needs no MPI at run time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace normlab::dist {

// True when normlab was built with MPI (OpenMPI's libopenmpi-dev found at configure time).
bool built_with_mpi();
// True when this process was started by mpirun or mpiexec (OpenMPI's or PMIx's environment).
bool launched();
// Joins the job: MPI_Init when launched (once; MPI_Finalize runs at exit). Throws a normlab::Error
// when launched but built without MPI. Without mpirun: nothing to do (rank 0 of 1).
void init();
// This process's rank in [0, world_size()) and the number of processes (init() first; 0 and 1 before).
int rank();
int world_size();
// The same for the whole job, whatever Group is alive.
int job_rank();
int job_size();

// Splits the current group (at first the whole job) into groups: the ranks that give the same
// color form one, ranked in their order. While the Group lives, rank(), world_size() and every
// collective below refer to it; its destructor restores the group before. Every rank of the current
// group must construct it (a collective), and destroy it in the same order. E.g. 4 processes, color
// = rank / 2: two groups of 2, each training its own data-parallel run.
class Group {
 public:
  explicit Group(int color);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

 private:
  int saved_rank_, saved_size_;
  bool split_ = false;  // an MPI communicator was made (pushed on dist.cc's stack of groups)
};

// Waits until every rank is here.
void barrier();
// Rank root's n values replace every rank's.
void broadcast(float* x, int64_t n, int root = 0);
void broadcast(double* x, int64_t n, int root = 0);
void broadcast(int64_t* x, int64_t n, int root = 0);
// Sums x (n values) over the ranks, in place on every rank: each value's W terms added in rank order
// (float values in double, rounded once) by the rank that owns its chunk (a reduce-scatter), then
// gathered by all. The same bits on every rank, and from run to run for a given world size.
void allreduce_sum(float* x, int64_t n);
void allreduce_sum(double* x, int64_t n);
// Every rank's n values, in rank order (world_size() * n values), on every rank.
std::vector<double> allgather(const double* x, int64_t n);
// Every rank's string (e.g. a hash of its settings), in rank order, on every rank.
std::vector<std::string> allgather(const std::string& s);
// Ends the whole job at once (MPI_Abort) after printing msg on this rank: for a rank that cannot go
// on while the others wait in a collective.
[[noreturn]] void abort_job(const std::string& msg, int code = 1);

}  // namespace normlab::dist
