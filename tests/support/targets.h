// Test helper: runs a check once per Highway target compiled in and supported by this CPU.
#pragma once
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <boost/test/unit_test.hpp>
#include <string>

#include "autograd/kernels/target.h"

namespace normlab::test {

// Calls f() with the dispatcher pinned to each target in turn (SCALAR, SSSE3, SSE4, AVX2, ...),
// checking that dispatch really switched; restores normal dispatch afterwards.
template <typename F>
void for_each_target(F&& f) {
  const auto targets = hwy::SupportedAndGeneratedTargets();
  BOOST_REQUIRE(!targets.empty());
  for (int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    BOOST_TEST_CONTEXT("Highway target " << hwy::TargetName(t)) {
      BOOST_REQUIRE_EQUAL(std::string(autograd::kernels::active_target()), std::string(hwy::TargetName(t)));
      f();
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Lengths that exercise a kernel's vector body and its tail on every target: 0, 1, lanes-1, lanes,
// lanes+1 for every lane count up to 16 (doubles and floats), and a few thousand.
inline std::vector<int64_t> tail_lengths() {
  return {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4099};
}

}  // namespace normlab::test
