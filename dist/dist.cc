// The job's processes and collectives over MPI (dist.h); rank 0 of 1 without mpirun.
#include "dist/dist.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "base/error.h"

#ifdef NORMLAB_HAVE_MPI
#include <mpi.h>
#endif

namespace normlab::dist {

namespace {

int g_rank = 0, g_size = 1;          // in the current group (the whole job unless a Group is alive)
int g_job_rank = 0, g_job_size = 1;  // in the whole job
bool g_joined = false;
#ifdef NORMLAB_HAVE_MPI
MPI_Comm g_comm = MPI_COMM_WORLD;  // the current group's communicator
std::vector<MPI_Comm> g_outer;     // the communicators of the groups around it, innermost last
#endif

// Checks an MPI return code: the collectives fail only when a rank died or the job is broken.
#ifdef NORMLAB_HAVE_MPI
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string("dist: ") + what + " failed on rank " + std::to_string(g_rank) + ": " +
              std::string(text, static_cast<size_t>(len)));
}

template <typename T>
MPI_Datatype type_of();
template <>
MPI_Datatype type_of<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype type_of<double>() { return MPI_DOUBLE; }
template <>
MPI_Datatype type_of<int64_t>() { return MPI_INT64_T; }

template <typename T>
void bcast(T* x, int64_t n, int root) {
  if (g_size == 1 || n == 0) return;
  // In chunks below 2^31 elements (MPI counts are int).
  for (int64_t i = 0; i < n; i += (int64_t{1} << 30)) {
    const int count = static_cast<int>(std::min<int64_t>(n - i, int64_t{1} << 30));
    check(MPI_Bcast(x + i, count, type_of<T>(), root, g_comm), "broadcast");
  }
}

// Sums the ranks' n values in rank order, as a reduce-scatter then an allgather: the values are cut
// into W chunks, rank r receives every rank's chunk r (MPI_Alltoall), adds them in rank order (in
// double, rounded once) and every rank then gathers every sum (MPI_Allgather). Each rank sends and
// receives 2n(W-1)/W values, where gathering to rank 0 made it receive n(W-1) and then send n(W-1);
// the bits are the same either way (the same order of the same additions).
template <typename T>
void sum_in_rank_order(T* x, int64_t n) {
  if (g_size == 1 || n == 0) return;
  const int64_t w = g_size, chunk = (n + w - 1) / w;
  if (chunk > (int64_t{1} << 30) / w) throw Error("dist: allreduce of " + std::to_string(n) + " values: too large");
  // Scratch buffers kept between calls: no allocation per training step once they have grown.
  thread_local std::vector<T> send, recv, mine;
  send.assign(static_cast<size_t>(w * chunk), T(0));
  std::copy(x, x + n, send.begin());
  recv.resize(static_cast<size_t>(w * chunk));
  mine.resize(static_cast<size_t>(chunk));
  const int c = static_cast<int>(chunk);
  check(MPI_Alltoall(send.data(), c, type_of<T>(), recv.data(), c, type_of<T>(), g_comm), "allreduce (reduce-scatter)");
  for (int64_t i = 0; i < chunk; ++i) {
    double s = 0;
    for (int64_t r = 0; r < w; ++r) s += static_cast<double>(recv[static_cast<size_t>(r * chunk + i)]);
    mine[static_cast<size_t>(i)] = static_cast<T>(s);
  }
  check(MPI_Allgather(mine.data(), c, type_of<T>(), send.data(), c, type_of<T>(), g_comm), "allreduce (allgather)");
  std::copy(send.begin(), send.begin() + n, x);
}
#endif

// OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMIx-based launchers set PMIX_RANK.
bool in_mpi_environment() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }

}  // namespace

bool built_with_mpi() {
#ifdef NORMLAB_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool launched() { return in_mpi_environment(); }

void init() {
  if (g_joined || !launched()) return;
#ifdef NORMLAB_HAVE_MPI
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
  // Errors come back as return codes (then thrown), not as an abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_job_rank = g_rank, g_job_size = g_size;
  g_joined = true;
#else
  throw Error("this normlab was built without MPI, so it cannot join a job started by mpirun: install "
              "libopenmpi-dev and openmpi-bin (make run and make test do) and build again");
#endif
}

int rank() { return g_rank; }
int world_size() { return g_size; }
int job_rank() { return g_job_rank; }
int job_size() { return g_job_size; }

Group::Group(int color) : saved_rank_(g_rank), saved_size_(g_size) {
  if (color < 0) throw Error("dist: a group's color must be >= 0, got " + std::to_string(color));
  if (g_size == 1) return;  // a world of one: every group is this process alone
#ifdef NORMLAB_HAVE_MPI
  MPI_Comm sub = MPI_COMM_NULL;
  check(MPI_Comm_split(g_comm, color, g_rank, &sub), "split into groups");
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  g_outer.push_back(g_comm);
  g_comm = sub;
  MPI_Comm_rank(sub, &g_rank);
  MPI_Comm_size(sub, &g_size);
  split_ = true;
#endif
}

Group::~Group() {
#ifdef NORMLAB_HAVE_MPI
  if (split_) {
    MPI_Comm sub = g_comm;
    g_comm = g_outer.back();
    g_outer.pop_back();
    MPI_Comm_free(&sub);
  }
#endif
  g_rank = saved_rank_, g_size = saved_size_;
}

void barrier() {
#ifdef NORMLAB_HAVE_MPI
  if (g_size > 1) check(MPI_Barrier(g_comm), "barrier");
#endif
}

#ifdef NORMLAB_HAVE_MPI
void broadcast(float* x, int64_t n, int root) { bcast(x, n, root); }
void broadcast(double* x, int64_t n, int root) { bcast(x, n, root); }
void broadcast(int64_t* x, int64_t n, int root) { bcast(x, n, root); }
void allreduce_sum(float* x, int64_t n) { sum_in_rank_order(x, n); }
void allreduce_sum(double* x, int64_t n) { sum_in_rank_order(x, n); }
#else
void broadcast(float*, int64_t, int) {}
void broadcast(double*, int64_t, int) {}
void broadcast(int64_t*, int64_t, int) {}
void allreduce_sum(float*, int64_t) {}
void allreduce_sum(double*, int64_t) {}
#endif

std::vector<double> allgather(const double* x, int64_t n) {
  std::vector<double> all(static_cast<size_t>(n * g_size));
#ifdef NORMLAB_HAVE_MPI
  if (g_size > 1) {
    check(MPI_Allgather(x, static_cast<int>(n), MPI_DOUBLE, all.data(), static_cast<int>(n), MPI_DOUBLE,
                        g_comm),
          "allgather");
    return all;
  }
#endif
  std::copy(x, x + n, all.begin());
  return all;
}

std::vector<std::string> allgather(const std::string& s) {
  if (g_size == 1) return {s};
#ifdef NORMLAB_HAVE_MPI
  // Lengths first, then the bytes, each rank's padded to the longest.
  double len = static_cast<double>(s.size());
  const std::vector<double> lens = allgather(&len, 1);
  size_t longest = 0;
  for (double l : lens) longest = std::max(longest, static_cast<size_t>(l));
  std::string mine = s;
  mine.resize(longest + 1, '\0');
  std::string all(mine.size() * static_cast<size_t>(g_size), '\0');
  check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(), static_cast<int>(mine.size()),
                      MPI_CHAR, g_comm),
        "allgather");
  std::vector<std::string> out;
  for (int r = 0; r < g_size; ++r) out.push_back(all.substr(r * mine.size(), static_cast<size_t>(lens[r])));
  return out;
#else
  return {s};
#endif
}

void abort_job(const std::string& msg, int code) {
  std::fprintf(stderr, "normlab: rank %d: %s\n", g_rank, msg.c_str());
  std::fflush(stderr);
#ifdef NORMLAB_HAVE_MPI
  if (g_joined) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

}  // namespace normlab::dist
