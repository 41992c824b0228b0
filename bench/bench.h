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

namespace normlab::bench {

// An allocator of 64-byte aligned memory, as normlab's tensors (and PyTorch's) have: a std::vector's
// 16-byte alignment would split every 64-byte AVX-512 access over two cache lines, which no tensor
// ever does.
template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) {
    const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
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
void register_norms();
void register_stream();
void register_train();
void register_scaling();
void register_conv();

}  // namespace normlab::bench
