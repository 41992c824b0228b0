// Shared helpers of the benchmark executable: random buffers and the registration functions of
// each benchmark file (called from bench/main.cc once the thread count is set).
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "autograd/allocator.h"

namespace normlab::bench {

// An allocator that takes its memory where normlab's tensors take theirs (the storage allocator:
// 64-byte aligned, and from 2 MiB on aligned to a huge page and marked for transparent huge pages),
// so that a kernel row measures the kernel on the memory a tensor would give it. A std::vector's
// 16-byte alignment would split every 64-byte AVX-512 access over two cache lines, and 4 KiB pages
// would stop the hardware prefetchers at every page (a row of sum dim1 is one 4 KiB page: 245-280 us
// on 4 KiB pages against 200-210 us on huge pages, Zen 4), neither of which a tensor ever has.
template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = autograd::detail::allocate_storage(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { autograd::detail::free_storage(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const AlignedAllocator<U>&) const { return false; }
};
template <typename T>
using AlignedVec = std::vector<T, AlignedAllocator<T>>;

// n values uniform in [-1, 1], fixed seed, 64-byte aligned.
template <typename T>
AlignedVec<T> random_vec(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  AlignedVec<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(u(gen));
  return v;
}

// Every benchmark's name is the workload name bench/pytorch_bench.py uses for the same work, so
// bench/table.py can put the two side by side.
void register_gemm();
void register_kernels();
// The kernel families' grains (autograd/grain.h): each family over a range of sizes, every grain 0.
void register_grain();
void register_norms();
void register_stream();
void register_peak();  ///< the FMA peak the GEMM-bound rows are held to (peak_bench.cc)
void register_pool();  ///< the thread pool's start-up cost, workers spinning or asleep (pool_bench.cc)
void register_train();
void register_scaling();
void register_conv();
void register_seq();
void register_second_order();  ///< gradient-penalty steps and Hessian-vector products (second_order_bench.cc)

}  // namespace normlab::bench
