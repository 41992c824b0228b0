// The thread pool (base/thread_pool.h): team jobs and parts jobs run each part exactly once, on
// distinct threads, and jobs inside jobs run on the calling thread alone.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace base = normlab::base;

BOOST_AUTO_TEST_SUITE(thread_pool)

// The pool: every part t < nt runs exactly once, on distinct threads, for changing
// thread counts (workers started by an earlier, larger region sit out smaller ones), many
// regions in a row (a lost wake-up would hang here), and a region inside a region runs inline.
BOOST_AUTO_TEST_CASE(pool_runs_each_part_once) {
  for (int round = 0; round < 200; ++round)
    for (int threads : {1, 3, 2, 1, 4, 2}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(threads));
      std::vector<std::thread::id> ids(static_cast<size_t>(threads));
      std::atomic<int> teams_wrong{0};
      base::parallel_run(threads, [&](int t, int nt) {
        if (nt != threads) teams_wrong.fetch_add(1);
        runs[static_cast<size_t>(t)].fetch_add(1);
        ids[static_cast<size_t>(t)] = std::this_thread::get_id();
      });
      BOOST_TEST_CONTEXT("round " << round << ", " << threads << " threads") {
        BOOST_TEST(teams_wrong.load() == 0);
        for (int t = 0; t < threads; ++t) BOOST_TEST(runs[static_cast<size_t>(t)].load() == 1);
        BOOST_TEST(ids[0] == std::this_thread::get_id());  // part 0 runs on the caller
        for (int t = 1; t < threads; ++t)
          for (int u = 0; u < t; ++u) BOOST_TEST(ids[static_cast<size_t>(t)] != ids[static_cast<size_t>(u)]);
      }
    }
  std::atomic<int> inner_parts{0}, inner_team{0};
  base::parallel_run(2, [&](int, int) {
    base::parallel_run(3, [&](int, int nt) {
      inner_parts.fetch_add(1);
      inner_team.store(nt);
    });
  });
  BOOST_TEST(inner_parts.load() == 2);  // once per outer part, on its own thread
  BOOST_TEST(inner_team.load() == 1);
}

// The same pool's parts jobs, interleaved with team jobs on the same workers: every part runs
// exactly once whatever the thread and part counts (more parts than threads, fewer, one), and
// parts inside a team member (or inside a part) run on that thread alone.
BOOST_AUTO_TEST_CASE(pool_parts_run_once_between_team_jobs) {
  for (int round = 0; round < 200; ++round)
    for (int threads : {2, 4, 1, 3}) {
      for (int64_t parts : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{64}}) {
        std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
        base::parallel_parts(threads, parts, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
        BOOST_TEST_CONTEXT("round " << round << ", " << threads << " threads, " << parts << " parts") {
          for (int64_t i = 0; i < parts; ++i) BOOST_TEST(runs[static_cast<size_t>(i)].load() == 1);
        }
      }
      std::atomic<int> members{0};
      base::parallel_run(threads, [&](int, int) { members.fetch_add(1); });
      BOOST_TEST(members.load() == threads);
    }
  std::atomic<int> inner{0};
  std::atomic<bool> same_thread{true};
  base::parallel_run(2, [&](int, int) {
    const std::thread::id me = std::this_thread::get_id();
    base::parallel_parts(4, 8, [&](int64_t) {
      inner.fetch_add(1);
      if (std::this_thread::get_id() != me) same_thread.store(false);
    });
  });
  BOOST_TEST(inner.load() == 16);
  BOOST_TEST(same_thread.load());
  std::atomic<int> wider{0};  // nested teams of more than one thread (Boost.Test is not thread-safe)
  base::parallel_parts(2, 4, [&](int64_t) {
    base::parallel_run(3, [&](int, int nt) { wider.fetch_add(nt != 1); });
  });
  BOOST_TEST(wider.load() == 0);
}

// Who claims which part: the caller from the front (parts 0 .. k-1, in order; k may be 0 when the
// workers took every part before the caller started), the workers from the back (parts - 1 down to
// k). With in_order = m, parts 0 .. m-1 are claimed before any other: when a later part starts,
// each of them has started too, but for at most one per other thread (claimed, not yet started);
// and a later part that waits for them finishes.
BOOST_AUTO_TEST_CASE(caller_claims_from_the_front_workers_from_the_back) {
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 200; ++round)
    for (int threads : {2, 3}) {
      const int64_t parts = 64;
      std::vector<std::thread::id> who(static_cast<size_t>(parts));
      std::vector<int64_t> ticket(static_cast<size_t>(parts));
      std::atomic<int64_t> next_ticket{0};
      base::parallel_parts(threads, parts, [&](int64_t i) {
        who[static_cast<size_t>(i)] = std::this_thread::get_id();
        ticket[static_cast<size_t>(i)] = next_ticket.fetch_add(1);
      });
      int64_t k = 0;  // the caller's parts are 0 .. k-1
      while (k < parts && who[static_cast<size_t>(k)] == caller) ++k;
      BOOST_TEST_CONTEXT("round " << round << ", " << threads << " threads, the caller's parts 0.." << k - 1) {
        for (int64_t i = k; i < parts; ++i) BOOST_TEST((who[static_cast<size_t>(i)] != caller));
        for (int64_t i = 1; i < k; ++i) BOOST_TEST(ticket[static_cast<size_t>(i)] > ticket[static_cast<size_t>(i - 1)]);
        if (threads == 2)  // one worker: from the back, one part after another
          for (int64_t i = k; i + 1 < parts; ++i)
            BOOST_TEST(ticket[static_cast<size_t>(i)] > ticket[static_cast<size_t>(i + 1)]);
      }
    }
  for (int round = 0; round < 200; ++round)
    for (int threads : {1, 2, 3, 4})
      for (int64_t in_order : {int64_t{1}, int64_t{5}, int64_t{16}}) {
        const int64_t parts = 24;
        std::vector<int64_t> seen(static_cast<size_t>(parts), -1);
        std::atomic<int64_t> started_first{0}, done_first{0};
        base::parallel_parts(
            threads, parts,
            [&](int64_t i) {
              if (i < in_order) {
                started_first.fetch_add(1);
                done_first.fetch_add(1);
                return;
              }
              seen[static_cast<size_t>(i)] = started_first.load();
              while (done_first.load() < in_order) std::this_thread::yield();
            },
            in_order);
        BOOST_TEST_CONTEXT("round " << round << ", " << threads << " threads, in_order " << in_order) {
          BOOST_TEST(done_first.load() == in_order);
          for (int64_t i = in_order; i < parts; ++i) BOOST_TEST(seen[static_cast<size_t>(i)] >= in_order - (threads - 1));
        }
      }
}

BOOST_AUTO_TEST_SUITE_END()
