// The installation secret and the API key table (migration 0003) on SQLite and PostgreSQL.
#include "persistence/api_key_store.hpp"
#include "persistence/installation.hpp"
#include "persistence/node_lock.hpp"
#include "store_backends.hpp"
#include "support/postgres.hpp"

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace {

using namespace herald;

domain::timestamp micros(std::int64_t value) {
  return domain::from_unix_micros(value);
}

void secret_is_created_once(test::store_backend& backend) {
  persistence::migrate(backend.url());
  auto first = persistence::installation_secret(backend.url());
  BOOST_TEST(first.bytes.size() == 64u); // 32 random bytes, hex
  BOOST_TEST(first.bytes.find_first_not_of("0123456789abcdef") == std::string::npos);
  BOOST_TEST(persistence::installation_secret(backend.url()).bytes == first.bytes);
  // Another installation draws its own.
  auto other = backend.fresh_database();
  persistence::migrate(other);
  BOOST_TEST(persistence::installation_secret(other).bytes != first.bytes);
}

/// Nodes starting together each try to create the secret; all must end with the same one.
void concurrent_creators_agree_on_one_secret(test::store_backend& backend) {
  constexpr int nodes = 6;
  persistence::migrate(backend.url());
  std::mutex mutex;
  std::condition_variable go;
  int ready = 0;
  std::vector<std::string> secrets(nodes);
  std::vector<std::string> errors(nodes);
  std::vector<std::thread> threads;
  for (int n = 0; n < nodes; ++n)
    threads.emplace_back([&, n] {
      try {
        auto sql = persistence::connect(backend.url());
        {
          std::unique_lock<std::mutex> lock(mutex);
          ++ready;
          go.notify_all();
          go.wait(lock, [&] { return ready == nodes; });
        }
        secrets[n] = persistence::installation_secret(*sql).bytes;
      } catch (const std::exception& e) {
        errors[n] = e.what();
        std::lock_guard<std::mutex> lock(mutex);
        ready = nodes;
        go.notify_all();
      }
    });
  for (auto& thread : threads)
    thread.join();
  for (int n = 0; n < nodes; ++n)
    BOOST_TEST(errors[n] == "");
  BOOST_TEST(std::set<std::string>(secrets.begin(), secrets.end()).size() == 1u);
  BOOST_TEST(secrets[0].size() == 64u);
}

void keys_are_stored_hashed_listed_and_revoked(test::store_backend& backend) {
  persistence::migrate(backend.url());
  persistence::api_key_store keys{backend.url()};
  auto scopes = *domain::parse_scopes("submit,read");
  auto created = keys.create("acme", scopes, micros(1'790'000'000'000'000));
  BOOST_TEST(domain::api_key_id(created.key_text).value_or("") == created.record.id);
  auto other = keys.create("globex", domain::scope_set::all(), micros(1'790'000'001'000'000));
  BOOST_TEST(other.key_text != created.key_text);
  BOOST_TEST(other.record.id != created.record.id);

  auto listed = keys.list();
  BOOST_TEST_REQUIRE(listed.size() == 2u);
  const auto& first = listed[0];
  BOOST_TEST(first.id == created.record.id);
  BOOST_TEST(first.tenant == "acme");
  BOOST_TEST((first.scopes == scopes));
  BOOST_TEST(first.hash == domain::api_key_hash(created.key_text));
  BOOST_TEST(domain::to_unix_micros(first.created_at) == 1'790'000'000'000'000);
  BOOST_TEST(!first.revoked_at.has_value());

  // The key itself is nowhere in the table.
  auto sql = persistence::connect(backend.url());
  long long holding_key = -1;
  *sql << "SELECT COUNT(*) FROM api_keys WHERE key_hash = :k OR id = :k2 OR scopes = :k3",
      soci::use(created.key_text), soci::use(created.key_text), soci::use(created.key_text),
      soci::into(holding_key);
  BOOST_TEST(holding_key == 0);

  BOOST_TEST(keys.revoke(created.record.id, micros(1'790'000'002'000'000)));
  BOOST_TEST(!keys.revoke(created.record.id, micros(1'790'000'003'000'000))); // once
  BOOST_TEST(!keys.revoke("no-such-key", micros(1'790'000'003'000'000)));
  listed = keys.list();
  BOOST_TEST_REQUIRE(listed.size() == 2u);
  BOOST_TEST_REQUIRE(listed[0].revoked_at.has_value());
  BOOST_TEST(domain::to_unix_micros(*listed[0].revoked_at) == 1'790'000'002'000'000);
  BOOST_TEST(!listed[1].revoked_at.has_value());
}

/// One live process per node name and database: a second holder is refused until the first
/// lets go; other names are independent.
void a_node_name_is_held_by_one_process(test::store_backend& backend) {
  persistence::migrate(backend.url());
  auto first = persistence::try_lock_node_name(backend.url(), "host-a:8080");
  BOOST_TEST_REQUIRE(first->held(), first->where());
  BOOST_TEST(!persistence::try_lock_node_name(backend.url(), "host-a:8080")->held());
  BOOST_TEST(persistence::try_lock_node_name(backend.url(), "host-b:8080")->held());
  first.reset(); // the process ended
  BOOST_TEST(persistence::try_lock_node_name(backend.url(), "host-a:8080")->held());
}

} // namespace

/// Expands the tests above into the enclosing fixture suite (fixture: a store_backend).
#define HERALD_INSTALLATION_AND_KEYS_TESTS()                                                       \
  BOOST_AUTO_TEST_CASE(secret_is_created_once) {                                                   \
    ::secret_is_created_once(*this);                                                               \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(concurrent_creators_agree_on_one_secret) {                                  \
    ::concurrent_creators_agree_on_one_secret(*this);                                              \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(keys_are_stored_hashed_listed_and_revoked) {                                \
    ::keys_are_stored_hashed_listed_and_revoked(*this);                                            \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(a_node_name_is_held_by_one_process) {                                       \
    ::a_node_name_is_held_by_one_process(*this);                                                   \
  }

BOOST_FIXTURE_TEST_SUITE(sqlite_installation_and_keys_tests, herald::test::sqlite_backend)

HERALD_INSTALLATION_AND_KEYS_TESTS()

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(postgres_installation_and_keys_tests, herald::test::postgres_backend,
                         *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

HERALD_INSTALLATION_AND_KEYS_TESTS()

BOOST_AUTO_TEST_SUITE_END()
