// The task_store contract against SQLite (a file in a fresh temporary folder per test).
#include "store_backends.hpp"
#include "task_store_contract.hpp"

#include <boost/test/unit_test.hpp>

BOOST_FIXTURE_TEST_SUITE(sqlite_store_tests, herald::test::sqlite_backend)

HERALD_TASK_STORE_CONTRACT()

BOOST_AUTO_TEST_SUITE_END()
