// Test helpers: compare tensors and arrays elementwise with a tolerance, naming the first mismatch.
#pragma once
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
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

// Parity of `got` with PyTorch's `want` (flattened, same length): every element within
// |got - want| <= atol + rtol |want|. A failure names the tensor, the number of bad elements, the
// first one and the largest error. With --log_level=message it also prints how close the comparison
// came (to judge the tolerances): "atol used" is how far beyond rtol |want| the worst element went
// (0 when rtol alone suffices).
inline void expect_elements_close(const std::string& name, const std::vector<double>& got,
                                  const std::vector<double>& want, double rtol, double atol) {
  int64_t bad = 0, first = -1;
  double worst = 0, worst_rel = 0;
  double floor_used = 0, floor_want = 0;  // the most any element needs of atol: |got - want| - rtol |want|
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    worst = std::max(worst, err);
    if (want[i] != 0) worst_rel = std::max(worst_rel, err / std::fabs(want[i]));
    if (err - rtol * std::fabs(want[i]) > floor_used) {
      floor_used = err - rtol * std::fabs(want[i]);
      floor_want = want[i];
    }
    if (!close(got[i], want[i], rtol, atol) && bad++ == 0) first = static_cast<int64_t>(i);
  }
  BOOST_TEST_MESSAGE(name << ": largest |got - want| " << worst << ", largest relative " << worst_rel
                          << ", atol used " << floor_used << " (at want " << floor_want << ")");
  if (bad) {
    std::ostringstream os;
    os << std::setprecision(17) << name << ": " << bad << " of " << got.size() << " elements differ beyond rtol "
       << rtol << ", atol " << atol << "; first at flat index " << first << ": got " << got[first]
       << ", PyTorch " << want[first] << "; largest |got - want| " << worst;
    BOOST_ERROR(os.str());
  }
}

// Tensor vs expected values (row-major), same element count required.
inline void check_tensor(const autograd::Tensor& t, const std::vector<double>& want, double rtol = 1e-5,
                         double atol = 1e-6) {
  BOOST_REQUIRE_EQUAL(t.numel(), static_cast<int64_t>(want.size()));
  check_close(t.to_vector(), want, want.size(), rtol, atol);
}

}  // namespace normlab::test
