// The caching allocator behind every tensor's Storage: freed buffers go to per-size-class free
// lists and are handed out again, so a training step that makes the same tensors every step does
// no malloc/free for their data after the first steps.
#pragma once
#include <cstddef>
#include <cstdint>

namespace normlab::autograd {

/// Byte counts of the storage allocator (all tensors' data buffers), for tests and benchmarks.
struct MemoryStats {
  size_t live_bytes = 0;       ///< bytes of buffers held by live storages (rounded to their size class)
  size_t live_blocks = 0;      ///< number of such buffers
  size_t peak_live_bytes = 0;  ///< the largest live_bytes seen (since start or reset_peak_memory_stats())
  size_t cached_bytes = 0;     ///< bytes of freed buffers kept for reuse
  size_t cached_blocks = 0;  ///< number of such buffers
  uint64_t allocations = 0;    ///< buffers handed out
  uint64_t cache_hits = 0;     ///< of which were reused from the cache
};

/// The current counters (thread-safe).
MemoryStats memory_stats();
/// Sets peak_live_bytes to the current live_bytes.
void reset_peak_memory_stats();
/// Returns every cached buffer to the system (live buffers are untouched).
void empty_cache();
/// Turns the cache on or off (on by default; the environment variable NORMLAB_NO_CACHING_ALLOCATOR=1
/// starts with it off). Turning it off empties the cache; buffers freed later go to the system.
void set_caching_allocator_enabled(bool on);
bool caching_allocator_enabled();  ///< Whether the cache is on.
/// Largest number of bytes the cache keeps (default 1 GiB); a freed buffer that would exceed it
/// goes to the system.
void set_cache_limit(size_t bytes);

namespace detail {
/// A 64-byte aligned buffer of at least `bytes` bytes (rounded up to a size class); null on failure.
void* allocate_storage(size_t bytes);
/// Gives back a buffer from allocate_storage with the same `bytes`.
void free_storage(void* p, size_t bytes);
/// The size class a request of `bytes` is rounded to (64-byte multiples; at most 1/8 over above 512).
size_t storage_size_class(size_t bytes);

/// Small objects (the blocks of make_shared: TensorImpl, Storage, Node): per-thread free lists in
/// 16-byte classes up to kPoolMaxBytes; larger requests go to operator new.
constexpr size_t kPoolMaxBytes = 512;
void* pool_allocate(size_t bytes);
void pool_free(void* p, size_t bytes);
}  // namespace detail

/// A standard allocator over the small-object pool, for std::allocate_shared.
template <typename T>
struct PoolAllocator {
  using value_type = T;  ///< The allocated type, T.
  PoolAllocator() = default;  ///< An allocator of the pool.
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  ///< Converts from the allocator of another type (the pool has no per-type state).
  T* allocate(size_t n) { return static_cast<T*>(detail::pool_allocate(n * sizeof(T))); }  ///< n objects of T from the pool (operator new above kPoolMaxBytes).
  void deallocate(T* p, size_t n) { detail::pool_free(p, n * sizeof(T)); }  ///< Gives back p, n objects from allocate().
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const { return true; }  ///< Always true: every PoolAllocator shares the one pool.
};

}  // namespace normlab::autograd
