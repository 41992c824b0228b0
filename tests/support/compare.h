// Test helpers: compare tensors and arrays elementwise with a tolerance, naming the first mismatch.
#pragma once
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "autograd/tensor.h"

namespace normlab::test {

// |a - b| <= atol + rtol |b|, with NaN == NaN and inf == inf of the same sign.
inline bool close(double a, double b, double rtol, double atol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

template <typename A, typename B>
void check_close(const A& got, const B& want, size_t n, double rtol, double atol) {
  for (size_t i = 0; i < n; ++i)
    if (!close(static_cast<double>(got[i]), static_cast<double>(want[i]), rtol, atol)) {
      BOOST_ERROR("element " << i << " of " << n << ": got " << got[i] << ", want " << want[i]);
      return;
    }
}

// Tensor vs expected values (row-major), same element count required.
inline void check_tensor(const autograd::Tensor& t, const std::vector<double>& want, double rtol = 1e-5,
                         double atol = 1e-6) {
  BOOST_REQUIRE_EQUAL(t.numel(), static_cast<int64_t>(want.size()));
  check_close(t.to_vector(), want, want.size(), rtol, atol);
}

}  // namespace normlab::test
