// The one Boost.Test entry point every test binary links.
#define BOOST_TEST_MODULE herald
#include <boost/test/unit_test.hpp>
