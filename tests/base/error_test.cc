// normlab::Error and check (base/error.h): check throws an Error with the given message, and builds
// a lazy message only when the condition fails.
#include <boost/test/unit_test.hpp>
#include <string>

#include "base/error.h"

BOOST_AUTO_TEST_SUITE(error)

BOOST_AUTO_TEST_CASE(check_throws_an_error_with_the_message) {
  BOOST_CHECK_NO_THROW(normlab::check(true, "unused"));
  try {
    normlab::check(false, "expected x, got y");
    BOOST_ERROR("check(false, ...) did not throw");
  } catch (const normlab::Error& e) {
    BOOST_TEST(std::string(e.what()) == "expected x, got y");
  }
}

BOOST_AUTO_TEST_CASE(a_lazy_message_is_built_only_on_failure) {
  int built = 0;
  const auto message = [&] {
    ++built;
    return std::string("built");
  };
  normlab::check(true, message);
  BOOST_TEST(built == 0);
  BOOST_CHECK_THROW(normlab::check(false, message), normlab::Error);
  BOOST_TEST(built == 1);
}

BOOST_AUTO_TEST_SUITE_END()
