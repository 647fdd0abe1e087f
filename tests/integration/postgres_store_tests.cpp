// The task_store contract against PostgreSQL: a fresh database per test on the server named by
// HERALD_TEST_POSTGRES_URL (scripts/with-postgres.sh provides one). Without it the suite is
// disabled, unless CI is set: then every test fails.
#include "store_backends.hpp"
#include "support/postgres.hpp"
#include "task_store_contract.hpp"

#include <boost/test/unit_test.hpp>

BOOST_FIXTURE_TEST_SUITE(postgres_store_tests, herald::test::postgres_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

HERALD_TASK_STORE_CONTRACT()

BOOST_AUTO_TEST_SUITE_END()
