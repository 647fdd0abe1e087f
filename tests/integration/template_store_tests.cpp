// Stored templates (migration 0010) against SQLite and, when HERALD_TEST_POSTGRES_URL names a
// server (scripts/with-postgres.sh), PostgreSQL.
#include "store_backends.hpp"
#include "support/postgres.hpp"
#include "template_contract.hpp"

#include <boost/test/unit_test.hpp>

BOOST_FIXTURE_TEST_SUITE(sqlite_template_tests, herald::test::sqlite_backend)

HERALD_TEMPLATE_CONTRACT()

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(postgres_template_tests, herald::test::postgres_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

HERALD_TEMPLATE_CONTRACT()

BOOST_AUTO_TEST_SUITE_END()
