// Seals of signed pushes in the store (migration 0011) against SQLite and, when
// HERALD_TEST_POSTGRES_URL names a server (scripts/with-postgres.sh), PostgreSQL.
#include "push_seal_contract.hpp"
#include "store_backends.hpp"
#include "support/postgres.hpp"

#include <boost/test/unit_test.hpp>

BOOST_FIXTURE_TEST_SUITE(sqlite_push_seal_tests, herald::test::sqlite_backend)

HERALD_PUSH_SEAL_CONTRACT()

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(postgres_push_seal_tests, herald::test::postgres_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

HERALD_PUSH_SEAL_CONTRACT()

BOOST_AUTO_TEST_SUITE_END()
