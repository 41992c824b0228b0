// The Boost.Test entry point shared by every test executable.
#define BOOST_TEST_MODULE normlab
#include <boost/test/unit_test.hpp>
