// Helpers for the data tests: the message of an expected normlab::Error, fixture paths, small data sets.
#pragma once
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/dataset.h"

namespace normlab::test {

// The message of the normlab::Error that f() throws (a test failure, and "", if it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  BOOST_ERROR("expected a normlab::Error, none was thrown");
  return "";
}

// Checks that message contains every one of parts (naming the missing part and the message).
inline void check_mentions(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& p : parts)
    BOOST_TEST(message.find(p) != std::string::npos, "message lacks \"" << p << "\": " << message);
}

// tests/data/fixtures/<name>.
inline std::string fixture(const std::string& name) {
  return std::string(NORMLAB_SOURCE_DIR) + "/tests/data/fixtures/" + name;
}

// A classification data set of n samples, D = 2: sample i is (i, 10 i) with label i % classes.
inline data::Dataset numbered(int64_t n, int64_t classes = 3) {
  data::Dataset ds;
  ds.name = "numbered";
  ds.num_classes = classes;
  for (int64_t c = 0; c < classes; ++c) ds.class_names.push_back("c" + std::to_string(c));
  ds.x = autograd::empty({n, 2});
  for (int64_t i = 0; i < n; ++i) {
    ds.x.data<float>()[2 * i] = static_cast<float>(i);
    ds.x.data<float>()[2 * i + 1] = static_cast<float>(10 * i);
    ds.labels.push_back(i % classes);
  }
  return ds;
}

}  // namespace normlab::test
