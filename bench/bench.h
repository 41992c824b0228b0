// Shared helpers of the benchmark executable: random buffers and the registration functions of
// each benchmark file (called from bench/main.cc once the thread count is set).
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace normlab::bench {

// n values uniform in [-1, 1], fixed seed.
template <typename T>
std::vector<T> random_vec(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<T> v(static_cast<size_t>(n));
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
