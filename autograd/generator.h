// A seeded random generator: every random draw in normlab takes one explicitly, so runs repeat exactly.
#pragma once
#include <cstdint>
#include <random>

namespace normlab::autograd {

/// mt19937_64 (its output is fixed by the C++ standard) with our own uniform and normal transforms,
/// so the same seed gives the same numbers with any compiler or standard library.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : engine_(seed) {}  ///< Seeds the engine with seed.
  /// Re-seeds; forgets any cached normal value.
  void seed(uint64_t s) { engine_.seed(s); has_spare_ = false; }
  /// 64 random bits.
  uint64_t next_u64() { return engine_(); }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Standard normal (Box-Muller, the second value cached).
  double normal();
  /// Uniform integer in [0, n), without modulo bias; n > 0.
  uint64_t randint(uint64_t n);

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace normlab::autograd
