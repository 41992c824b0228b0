// dist/: the collectives, run in one process (a world of one) and under mpirun -np 2 and 3 (ctest
// -L mpi): every rank runs the same cases in the same order, so the collectives meet.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "autograd/generator.h"
#include "autograd/tensor.h"
#include "base/error.h"
#include "dist/dist.h"

using namespace normlab;

namespace {

// Joins the job (if started by mpirun) before the first case.
struct JoinJob {
  JoinJob() { dist::init(); }
};

// What rank r contributes at element i: values of mixed magnitudes, so that the order of the sum
// shows in the last bits.
float contribution(int r, int64_t i) {
  autograd::Generator gen(1000 * static_cast<uint64_t>(r) + static_cast<uint64_t>(i));
  return static_cast<float>(autograd::randn({1}, gen).item() * std::pow(10.0, (r * 7 + i) % 9 - 4));
}

// The bits of a float, as a double (to compare over ranks with allgather).
double bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return static_cast<double>(u);
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(JoinJob);

BOOST_AUTO_TEST_SUITE(collectives)

BOOST_AUTO_TEST_CASE(rank_and_world_size) {
  const int w = dist::world_size(), r = dist::rank();
  BOOST_TEST(w >= 1);
  BOOST_TEST((r >= 0 && r < w));
  if (w > 1) BOOST_TEST(dist::launched());  // more than one rank only under mpirun
  // Every rank sees the same world size and its own distinct rank.
  const double mine[2] = {static_cast<double>(r), static_cast<double>(w)};
  const std::vector<double> all = dist::allgather(mine, 2);
  BOOST_REQUIRE(all.size() == static_cast<size_t>(2 * w));
  for (int k = 0; k < w; ++k) {
    BOOST_TEST(all[2 * k] == k);
    BOOST_TEST(all[2 * k + 1] == w);
  }
}

BOOST_AUTO_TEST_CASE(allreduce_sums_in_rank_order_with_the_same_bits_on_every_rank) {
  const int w = dist::world_size(), r = dist::rank();
  for (const int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000}}) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = contribution(r, i);
    dist::allreduce_sum(x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      double want = 0;  // the documented order: rank 0, 1, 2, ... in double, rounded once
      for (int k = 0; k < w; ++k) want += static_cast<double>(contribution(k, i));
      BOOST_TEST(x[i] == static_cast<float>(want));
    }
    // The same bits on every rank.
    const double b = bits_of(x[n - 1]);
    for (double other : dist::allgather(&b, 1)) BOOST_TEST(other == b);
  }
  std::vector<double> d{1.0 + r, 0.5 * r};
  dist::allreduce_sum(d.data(), 2);
  BOOST_TEST(d[0] == w + w * (w - 1) / 2.0);
  BOOST_TEST(d[1] == 0.5 * w * (w - 1) / 2.0);
}

BOOST_AUTO_TEST_CASE(broadcast_and_allgather_of_strings) {
  const int w = dist::world_size(), r = dist::rank();
  std::vector<double> v{static_cast<double>(r), 3.5};
  dist::broadcast(v.data(), 2, w - 1);
  BOOST_TEST(v[0] == w - 1);
  int64_t n = 10 + r;
  dist::broadcast(&n, 1, 0);
  BOOST_TEST(n == 10);
  const std::vector<std::string> names = dist::allgather(std::string(static_cast<size_t>(r), 'x') + "rank");
  BOOST_REQUIRE(names.size() == static_cast<size_t>(w));
  for (int k = 0; k < w; ++k) BOOST_TEST(names[k] == std::string(static_cast<size_t>(k), 'x') + "rank");
  dist::barrier();
}

BOOST_AUTO_TEST_CASE(groups_split_the_job_and_restore_it) {
  const int job = dist::job_size(), me = dist::job_rank();
  BOOST_TEST(me == dist::rank());
  BOOST_TEST(job == dist::world_size());
  for (const int size : {1, 2}) {
    {
      dist::Group group(me / size);  // ranks [k * size, (k + 1) * size) form group k
      const int first = me / size * size, members = std::min(size, job - first);
      BOOST_TEST(dist::world_size() == members);
      BOOST_TEST(dist::rank() == me - first);
      BOOST_TEST(dist::job_rank() == me);
      BOOST_TEST(dist::job_size() == job);
      // A collective meets the group's ranks only: the sum of their job ranks.
      double x = me;
      dist::allreduce_sum(&x, 1);
      BOOST_TEST(x == members * first + members * (members - 1) / 2.0);
      const std::vector<std::string> names = dist::allgather(std::to_string(me));
      BOOST_REQUIRE(names.size() == static_cast<size_t>(members));
      for (int k = 0; k < members; ++k) BOOST_TEST(names[k] == std::to_string(first + k));
      {
        dist::Group alone(static_cast<int>(dist::rank()));  // nested: every rank by itself
        BOOST_TEST(dist::world_size() == 1);
        BOOST_TEST(dist::rank() == 0);
      }
      BOOST_TEST(dist::world_size() == members);
    }
    // Back to the whole job.
    BOOST_TEST(dist::world_size() == job);
    BOOST_TEST(dist::rank() == me);
    double y = 1;
    dist::allreduce_sum(&y, 1);
    BOOST_TEST(y == job);
  }
  BOOST_CHECK_THROW(dist::Group(-1), Error);
}

BOOST_AUTO_TEST_SUITE_END()
