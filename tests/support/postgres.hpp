#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/test/unit_test.hpp>

namespace herald::test {

/// The PostgreSQL server tests may use, from HERALD_TEST_POSTGRES_URL
/// (scripts/with-postgres.sh sets it); nullopt when unset or empty.
std::optional<std::string> test_postgres_url();

/// Whether the environment variable CI is set: PostgreSQL tests must then run, not be skipped.
bool running_in_ci();

/// Precondition for PostgreSQL suites: enabled when the URL is set, and also when CI is set
/// (the fixture then fails loudly instead of the suite being skipped quietly).
boost::test_tools::assertion_result postgres_tests_enabled(boost::unit_test::test_unit_id);

/// The URL, or throws std::runtime_error saying how to provide one.
std::string require_test_postgres_url();

/// A database name no other test (or test process) uses: "<prefix><pid>_<random>".
std::string unique_database_name(std::string_view prefix = "herald_t_");

/// A new, empty database on the test server, for one test alone: its URL. Nodes of tests that
/// share a database act as one cluster and sweep each other's tasks, so a test that counts
/// provider calls or leaves tasks waiting needs a database of its own.
std::string own_test_database(std::string_view prefix = "herald_e2e_");

/// `url` with its database name replaced; the query string, if any, is kept.
std::string with_database(const std::string& url, const std::string& database);

} // namespace herald::test
