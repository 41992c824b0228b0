// Test helper: seeded uniform random vectors, the inputs of the kernel tests.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace normlab::test {

// n values drawn uniformly from [lo, hi) by a mt19937 seeded with `seed`, converted to T.
template <typename T>
std::vector<T> random_vec(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(u(gen));
  return v;
}

// n values uniform in [-1, 1).
template <typename T>
std::vector<T> random_vec(int64_t n, unsigned seed) {
  return random_vec<T>(n, -1.0, 1.0, seed);
}

}  // namespace normlab::test
