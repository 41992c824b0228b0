// The caching storage allocator: size classes, reuse of freed buffers, the counters, turning the
// cache off, its limit, and use from several threads.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "autograd/autograd.h"

using namespace normlab::autograd;

namespace {

// Turns the cache on for a test (also when NORMLAB_NO_CACHING_ALLOCATOR=1 turned it off) and
// restores the settings afterwards.
struct CacheOn {
  CacheOn() : was_on(caching_allocator_enabled()) { set_caching_allocator_enabled(true); }
  ~CacheOn() {
    set_cache_limit(size_t{1} << 30);
    set_caching_allocator_enabled(was_on);
  }
  bool was_on;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(allocator, CacheOn)

BOOST_AUTO_TEST_CASE(size_classes_are_64_byte_multiples_at_most_an_eighth_over) {
  // Hand-worked: up to 512 bytes, whole cache lines; above, 8 classes per power of two.
  BOOST_TEST(detail::storage_size_class(0) == 64u);
  BOOST_TEST(detail::storage_size_class(1) == 64u);
  BOOST_TEST(detail::storage_size_class(64) == 64u);
  BOOST_TEST(detail::storage_size_class(65) == 128u);
  BOOST_TEST(detail::storage_size_class(512) == 512u);
  BOOST_TEST(detail::storage_size_class(513) == 576u);    // 9 steps of 64 (512 < n <= 1024)
  BOOST_TEST(detail::storage_size_class(1000) == 1024u);
  BOOST_TEST(detail::storage_size_class(1025) == 1152u);  // 9 steps of 128
  BOOST_TEST(detail::storage_size_class(4096) == 4096u);
  for (size_t n = 1; n < (size_t{1} << 22); n = n * 3 / 2 + 7) {
    const size_t c = detail::storage_size_class(n);
    BOOST_TEST_CONTEXT("n = " << n) {
      BOOST_TEST(c >= n);
      BOOST_TEST(c % 64 == 0u);
      BOOST_TEST(c <= std::max<size_t>(64, (n + 63) / 64 * 64) + n / 8);
      BOOST_TEST(detail::storage_size_class(c) == c);  // a class is its own class
    }
  }
}

BOOST_AUTO_TEST_CASE(a_freed_buffer_is_reused_for_the_same_size_class) {
  void* first;
  {
    Tensor a = empty({1000});
    first = a.raw_data();
  }
  const MemoryStats before = memory_stats();
  BOOST_TEST(before.cached_bytes >= detail::storage_size_class(4000));
  Tensor b = empty({990});  // 3960 bytes: the same class as 4000
  const MemoryStats after = memory_stats();
  BOOST_TEST(b.raw_data() == first);
  BOOST_TEST(after.cache_hits == before.cache_hits + 1);
  BOOST_TEST(after.allocations == before.allocations + 1);
  BOOST_TEST(after.cached_bytes == before.cached_bytes - detail::storage_size_class(4000));
}

BOOST_AUTO_TEST_CASE(buffers_of_a_huge_page_or_more_start_at_a_huge_page_and_hold_their_data) {
  empty_cache();  // fresh buffers from the system, not reused ones
  constexpr size_t kHuge = size_t(2) << 20;
  for (int64_t n : {int64_t(524288), int64_t(524289), int64_t(3 << 20), int64_t(4096 * 1024)}) {
    Tensor t = empty({n});  // n floats: 2 MiB, just over, 12 MiB, 16 MiB
    BOOST_TEST(reinterpret_cast<uintptr_t>(t.raw_data()) % kHuge == 0, n << " floats");
    float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 1000);
    bool same = true;
    for (int64_t i = 0; i < n; ++i) same = same && p[i] == static_cast<float>(i % 1000);
    BOOST_TEST(same, n << " floats keep their values");
  }
  Tensor small = empty({1000});
  BOOST_TEST(reinterpret_cast<uintptr_t>(small.raw_data()) % 64 == 0);
}

BOOST_AUTO_TEST_CASE(live_bytes_count_the_buffers_of_live_storages) {
  const MemoryStats s0 = memory_stats();
  Tensor a = zeros({100, 10});  // 4000 bytes -> class 4096
  const MemoryStats s1 = memory_stats();
  BOOST_TEST(s1.live_bytes == s0.live_bytes + 4096);
  BOOST_TEST(s1.live_blocks == s0.live_blocks + 1);
  BOOST_TEST(s1.peak_live_bytes >= s1.live_bytes);
  Tensor view = reshape(a, {1000});  // shares the storage: nothing new
  BOOST_TEST(memory_stats().live_bytes == s1.live_bytes);
  a = Tensor();
  BOOST_TEST(memory_stats().live_bytes == s1.live_bytes);
  view = Tensor();
  BOOST_TEST(memory_stats().live_bytes == s0.live_bytes);
  reset_peak_memory_stats();
  BOOST_TEST(memory_stats().peak_live_bytes == s0.live_bytes);
}

BOOST_AUTO_TEST_CASE(turned_off_the_cache_keeps_nothing) {
  { Tensor a = empty({256}); }
  BOOST_TEST(memory_stats().cached_bytes > 0u);
  set_caching_allocator_enabled(false);
  BOOST_TEST(!caching_allocator_enabled());
  BOOST_TEST(memory_stats().cached_bytes == 0u);
  const uint64_t hits = memory_stats().cache_hits;
  { Tensor a = empty({256}); }
  { Tensor a = empty({256}); }
  BOOST_TEST(memory_stats().cached_bytes == 0u);
  BOOST_TEST(memory_stats().cache_hits == hits);
  set_caching_allocator_enabled(true);
  { Tensor a = empty({256}); }
  BOOST_TEST(memory_stats().cached_bytes == 1024u);
  empty_cache();
  BOOST_TEST(memory_stats().cached_bytes == 0u);
  BOOST_TEST(memory_stats().cached_blocks == 0u);
}

BOOST_AUTO_TEST_CASE(the_cache_stays_within_its_limit) {
  empty_cache();
  set_cache_limit(10000);
  {
    std::vector<Tensor> ts;
    for (int i = 0; i < 5; ++i) ts.push_back(empty({1024}));  // 4096 bytes each
  }
  BOOST_TEST(memory_stats().cached_bytes == 8192u);  // two fit under 10000, three went back
  BOOST_TEST(memory_stats().cached_blocks == 2u);
  set_cache_limit(5000);
  BOOST_TEST(memory_stats().cached_bytes == 4096u);
}

BOOST_AUTO_TEST_CASE(threads_allocating_and_freeing_leave_the_counters_balanced) {
  // Boost.Test's assertions are not thread-safe: each thread counts its wrong results and the
  // main thread checks the counts after the joins.
  const MemoryStats s0 = memory_stats();
  auto work = [](int seed, int* wrong) {
    Generator gen(seed);
    for (int i = 0; i < 2000; ++i) {
      Tensor a = randn({1 + i % 37, 8}, gen);
      Tensor b = mul(a, 2.0);
      if (b.flat(0) != 2 * a.flat(0)) ++*wrong;
    }
  };
  int wrong[3] = {0, 0, 0};
  std::thread t1(work, 1, &wrong[0]), t2(work, 2, &wrong[1]);
  work(3, &wrong[2]);
  t1.join();
  t2.join();
  BOOST_TEST(wrong[0] + wrong[1] + wrong[2] == 0);
  const MemoryStats s1 = memory_stats();
  BOOST_TEST(s1.live_bytes == s0.live_bytes);
  BOOST_TEST(s1.live_blocks == s0.live_blocks);
  BOOST_TEST(s1.allocations == s0.allocations + 3 * 2000 * 2);
}

BOOST_AUTO_TEST_CASE(the_small_object_pool_reuses_blocks_and_takes_any_size) {
  // Blocks freed on one thread are reused there (the last freed first); sizes above the pool's
  // classes and blocks freed by another thread are fine too. (Under ASan the pool is bypassed.)
  void* a = detail::pool_allocate(40);
  std::memset(a, 1, 40);
  detail::pool_free(a, 40);
  void* b = detail::pool_allocate(48);  // the same 16-byte class as 40
#if !defined(__SANITIZE_ADDRESS__)
  BOOST_TEST(a == b);
#endif
  void* big = detail::pool_allocate(detail::kPoolMaxBytes + 1);
  std::memset(big, 2, detail::kPoolMaxBytes + 1);
  std::thread t([&] { detail::pool_free(b, 48); });
  t.join();
  detail::pool_free(big, detail::kPoolMaxBytes + 1);
  // A tensor made on one thread and dropped on another.
  Tensor x;
  std::thread maker([&] { x = mul(ones({3}), 2.0); });
  maker.join();
  BOOST_TEST(x.flat(2) == 2.0);
  x = Tensor();
}

BOOST_AUTO_TEST_SUITE_END()
