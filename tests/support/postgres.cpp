#include "support/postgres.hpp"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <unistd.h>

namespace herald::test {

std::optional<std::string> test_postgres_url() {
  const char* url = std::getenv("HERALD_TEST_POSTGRES_URL");
  if (url == nullptr || *url == '\0')
    return std::nullopt;
  return std::string(url);
}

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

boost::test_tools::assertion_result postgres_tests_enabled(boost::unit_test::test_unit_id) {
  if (test_postgres_url() || running_in_ci())
    return true;
  constexpr const char* why = "HERALD_TEST_POSTGRES_URL is not set: PostgreSQL tests disabled "
                              "(run them with scripts/with-postgres.sh <test binary>)";
  // Boost.Test shows a failed precondition only at --log_level=test_suite; say it once anyway.
  static std::once_flag told;
  std::call_once(told, [&] { std::cerr << "herald tests: " << why << "\n"; });
  boost::test_tools::assertion_result result(false);
  result.message() << why;
  return result;
}

std::string require_test_postgres_url() {
  if (auto url = test_postgres_url())
    return *url;
  throw std::runtime_error("HERALD_TEST_POSTGRES_URL is not set but CI is: PostgreSQL tests "
                           "must run in CI (wrap the test command in scripts/with-postgres.sh)");
}

std::string unique_database_name(std::string_view prefix) {
  static std::atomic<unsigned> counter{0};
  std::random_device device;
  std::mt19937_64 random(device());
  return std::string(prefix) + std::to_string(::getpid()) + "_" +
         std::to_string(counter.fetch_add(1)) + "_" + std::to_string(random() % 1000000007ULL);
}

std::string own_test_database(std::string_view prefix) {
  const auto url = require_test_postgres_url();
  const auto name = unique_database_name(prefix);
  const auto command = "psql -q '" + url + "' -c 'CREATE DATABASE " + name + "' > /dev/null";
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("could not create test database " + name + " with psql");
  return with_database(url, name);
}

std::string with_database(const std::string& url, const std::string& database) {
  const auto scheme = url.find("://");
  const auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos)
    throw std::invalid_argument("no database in URL '" + url + "'");
  const auto query = url.find('?', slash);
  return url.substr(0, slash + 1) + database +
         (query == std::string::npos ? std::string() : url.substr(query));
}

} // namespace herald::test
