// A seeded random generator with portable uniform, normal and integer draws.
#include "autograd/generator.h"

#include <cmath>

namespace normlab::autograd {

double Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Box-Muller: u1 in (0, 1] so log(u1) is finite.
  const double u1 = 1.0 - uniform(), u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * M_PI * u2;
  spare_ = r * std::sin(t);
  has_spare_ = true;
  return r * std::cos(t);
}

uint64_t Generator::randint(uint64_t n) {
  // Rejection sampling: draw below the largest multiple of n.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next_u64();
  while (x >= limit);
  return x % n;
}

}  // namespace normlab::autograd
