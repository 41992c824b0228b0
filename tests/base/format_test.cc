// Python-style number formatting (base/format.h): Python's repr of floats and booleans.
#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/format.h"

using normlab::base::py_bool;
using normlab::base::py_float;

BOOST_AUTO_TEST_SUITE(format)

BOOST_AUTO_TEST_CASE(python_float_repr) {
  const std::vector<std::pair<double, std::string>> cases = {
      {1e-5, "1e-05"}, {0.1, "0.1"}, {1.0, "1.0"}, {0.001, "0.001"}, {1e-4, "0.0001"}, {1.5e-7, "1.5e-07"},
      {100, "100.0"}, {1e16, "1e+16"}, {123.25, "123.25"}, {-0.5, "-0.5"}, {0, "0.0"}, {1.0 / 3, "0.3333333333333333"}};
  for (auto& [v, s] : cases) BOOST_TEST(py_float(v) == s);
}

BOOST_AUTO_TEST_CASE(python_bool_repr) {
  BOOST_TEST(py_bool(true) == "True");
  BOOST_TEST(py_bool(false) == "False");
}

BOOST_AUTO_TEST_SUITE_END()
