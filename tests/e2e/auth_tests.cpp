// The built herald binary with auth.mode api_keys: keys made by `herald keys create` against
// the same database; no key is 401, one tenant cannot read, list or replay another's messages,
// ids computed from business data find nothing, revocation counts within the refresh bound,
// /metrics moves to its own listener. And the embedded default (loopback, auth none) still
// takes the README's requests without a key.

#include "support/herald_server.hpp"
#include "support/postgres.hpp"

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <openssl/sha.h>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

/// Channels for the tests: sms always fails permanently, after a second, so its tasks become
/// dead letters and a replayed one stays in flight long enough to be asked about again.
std::string keyed_config(const std::string& extra = {}) {
  return R"({ "auth": {"mode": "api_keys", "key_refresh_ms": 100}, )" + extra + R"(
    "channels": [
      {"name": "sms", "type": "simulated", "permanent_failure_rate": 1.0, "latency_ms": 1000},
      {"name": "app", "type": "simulated"}
    ]})";
}

std::string message(const std::string& biz_id, const std::string& user_id = "u-1") {
  return json::serialize(
      json::object{{"biz_type", "PASSWORD_RESET"},
                   {"biz_id", biz_id},
                   {"user_id", user_id},
                   {"channels", json::array{"sms"}},
                   {"to", json::object{{"sms", "+8613800000000"}}},
                   {"content", json::object{{"title", "reset"}, {"body", "code 123456"}}}});
}

header_list bearer(const std::string& key) {
  auto headers = json_headers();
  headers.emplace_back("Authorization", "Bearer " + key);
  return headers;
}

http_response call(running_herald& herald, const std::string& method, const std::string& target,
                   const std::string& key, const std::string& body = {}) {
  return request(host, herald.port(), method, target, body,
                 key.empty() ? json_headers() : bearer(key));
}

std::string text(const json::value& value) {
  return std::string(value.as_string());
}

std::string error_code(const http_response& response) {
  return text(json::parse(response.body).at("error").at("code"));
}

/// Lower-case hex SHA-256, as src/domain/keys.cpp derived message ids before they were keyed.
std::string sha256_hex(const std::string& data) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  static constexpr char alphabet[] = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : digest) {
    out += alphabet[byte >> 4];
    out += alphabet[byte & 0x0f];
  }
  return out;
}

std::string length_prefixed(const std::string& field) {
  return std::to_string(field.size()) + ":" + field;
}

/// Whether GET `target` with `key` answers `status` within 10 s (asked every 20 ms): a key
/// created or revoked takes effect within auth.key_refresh_ms.
bool answers_soon(running_herald& herald, const std::string& target, const std::string& key,
                  int status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (call(herald, "GET", target, key).status != status) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // polling a condition, bounded
  }
  return true;
}

/// Whether herald's log holds `text` within 10 s (polled every 20 ms).
bool logged_soon(running_herald& herald, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (herald.process().log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // polling a condition, bounded
  }
  return true;
}

/// Polls GET /v1/messages/{id} every 20 ms until its first task is in `state`; bounded.
bool wait_for_state(running_herald& herald, const std::string& key, const std::string& message_id,
                    const std::string& state) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto view = call(herald, "GET", "/v1/messages/" + message_id, key);
    if (view.status == 200 &&
        text(json::parse(view.body).at("tasks").as_array().at(0).at("status")) == state)
      return true;
    std::this_thread::sleep_for(20ms); // polling a condition, bounded
  }
  return false;
}

/// Tenant names unique to this run, so a PostgreSQL database shared by tests never mixes them.
std::string unique_tenant(const std::string& name) {
  std::random_device device;
  return "tenant-" + name + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(device() % 1000000);
}

/// A database (`url`; empty: a fresh SQLite file) with keys for two tenants, and herald
/// serving it with API keys.
struct two_tenants {
  explicit two_tenants(const std::string& url = {})
      : database(url.empty() ? "sqlite:" + dir.file("herald.db") : url),
        key_a(create_api_key(database, tenant_a, "submit,read,admin")),
        key_b(create_api_key(database, tenant_b, "submit,read,admin")),
        herald(database, keyed_config()) {}

  temp_dir dir{"herald-e2e-auth"};
  std::string tenant_a = unique_tenant("a");
  std::string tenant_b = unique_tenant("b");
  std::string database;
  std::string key_a;
  std::string key_b;
  running_herald herald;
};

struct two_tenants_on_postgres : two_tenants {
  two_tenants_on_postgres() : two_tenants(own_test_database()) {}
};

void tenants_are_isolated(two_tenants& t) {
  auto& herald = t.herald;
  const auto& key_a = t.key_a;
  const auto& key_b = t.key_b;
  auto accepted = call(herald, "POST", "/v1/messages", key_a, message("reset-1"));
  BOOST_REQUIRE_EQUAL(accepted.status, 202);
  auto answer = json::parse(accepted.body);
  auto message_id = text(answer.at("message_id"));
  auto task_id = text(answer.at("tasks").as_array().at(0).at("task_id"));
  BOOST_REQUIRE(wait_for_state(herald, key_a, message_id, "FAILED"));

  auto unknown = call(herald, "GET", "/v1/messages/msg_000000000000000000000000", key_b);
  auto theirs = call(herald, "GET", "/v1/messages/" + message_id, key_b);
  BOOST_TEST(theirs.status == 404);
  BOOST_TEST(theirs.body == unknown.body); // indistinguishable from an unknown id

  auto listed_b = call(herald, "GET", "/v1/dead-letters", key_b);
  BOOST_REQUIRE_EQUAL(listed_b.status, 200);
  BOOST_TEST(json::parse(listed_b.body).at("dead_letters").as_array().empty());
  auto listed_a = call(herald, "GET", "/v1/dead-letters", key_a);
  BOOST_TEST(json::parse(listed_a.body).at("dead_letters").as_array().size() == 1u);

  auto replay = "/v1/dead-letters/" + task_id + "/replay";
  auto refused = call(herald, "POST", replay, key_b);
  BOOST_TEST(refused.status == 404);
  BOOST_TEST(error_code(refused) == "not_found");
  BOOST_TEST(call(herald, "POST", replay, key_a).status == 202);
  BOOST_REQUIRE(wait_for_state(herald, key_a, message_id, "FAILED"));
  // Failed again after the replay: replayable again, once; replayed and not failed again
  // (the provider call takes a second): 409, nothing changed.
  BOOST_TEST(call(herald, "POST", replay, key_a).status == 202);
  auto again = call(herald, "POST", replay, key_a);
  BOOST_TEST(again.status == 409);
  BOOST_TEST(error_code(again) == "not_replayable");

  // A body naming another tenant than the key's is refused, and writes nothing.
  auto body = json::parse(message("reset-2")).as_object();
  body["tenant"] = t.tenant_a;
  auto foreign = call(herald, "POST", "/v1/messages", key_b, json::serialize(body));
  BOOST_TEST(foreign.status == 403);
  BOOST_TEST(error_code(foreign) == "forbidden");
}

void computed_ids_find_nothing(two_tenants& t) {
  auto accepted = call(t.herald, "POST", "/v1/messages", t.key_a, message("reset-3", "u-123"));
  BOOST_REQUIRE_EQUAL(accepted.status, 202);
  auto message_id = text(json::parse(accepted.body).at("message_id"));

  // What anyone knowing the tenant, type, biz id and user id could compute before.
  auto encoded = length_prefixed(t.tenant_a) + length_prefixed("PASSWORD_RESET") +
                 length_prefixed("reset-3") + length_prefixed("u-123");
  auto computed = "msg_" + sha256_hex(encoded).substr(0, 24);
  BOOST_TEST(message_id != computed);
  BOOST_TEST(call(t.herald, "GET", "/v1/messages/" + computed, t.key_a).status == 404);
  BOOST_TEST(call(t.herald, "GET", "/v1/messages/" + message_id, t.key_a).status == 200);

  // Keyed ids stay deterministic: a resubmission answers the same id.
  auto again = call(t.herald, "POST", "/v1/messages", t.key_a, message("reset-3", "u-123"));
  BOOST_TEST(again.status == 200);
  BOOST_TEST(text(json::parse(again.body).at("message_id")) == message_id);
}

} // namespace

BOOST_AUTO_TEST_SUITE(auth_tests)

BOOST_FIXTURE_TEST_CASE(no_key_is_401_and_health_stays_open, two_tenants) {
  for (const auto& [method, target] :
       {std::pair{"POST", "/v1/messages"}, std::pair{"GET", "/v1/messages/msg_1"},
        std::pair{"GET", "/v1/dead-letters"}, std::pair{"POST", "/v1/dead-letters/tsk_1/replay"}}) {
    auto response = call(herald, method, target, "", message("no-key"));
    BOOST_TEST(response.status == 401, method << " " << target);
    BOOST_TEST(response.header("www-authenticate") == "Bearer");
    BOOST_TEST(error_code(response) == "unauthorized");
  }
  auto forged = key_a;
  forged.back() = forged.back() == '0' ? '1' : '0';
  BOOST_TEST(call(herald, "GET", "/v1/dead-letters", forged).status == 401);
  BOOST_TEST(herald.get("/healthz").status == 200);
  BOOST_TEST(herald.get("/readyz").status == 200);
  BOOST_TEST(call(herald, "GET", "/v1/dead-letters", key_a).status == 200);
}

BOOST_FIXTURE_TEST_CASE(a_tenant_cannot_read_list_or_replay_another_tenants_messages, two_tenants) {
  tenants_are_isolated(*this);
}

BOOST_FIXTURE_TEST_CASE(ids_computed_from_business_data_find_nothing, two_tenants) {
  computed_ids_find_nothing(*this);
}

BOOST_AUTO_TEST_CASE(ids_are_keyed_without_api_keys_too) {
  running_herald herald({}); // embedded config: auth none
  auto accepted = herald.post(message("reset-5", "u-123"));
  BOOST_REQUIRE_EQUAL(accepted.status, 202);
  auto encoded = length_prefixed("default") + length_prefixed("PASSWORD_RESET") +
                 length_prefixed("reset-5") + length_prefixed("u-123");
  auto computed = "msg_" + sha256_hex(encoded).substr(0, 24);
  BOOST_TEST(text(json::parse(accepted.body).at("message_id")) != computed);
  BOOST_TEST(herald.get("/v1/messages/" + computed).status == 404);
}

BOOST_FIXTURE_TEST_CASE(scopes_are_enforced_and_revocation_counts_within_the_bound, two_tenants) {
  auto reader = create_api_key(database, tenant_a, "read");
  // Created after start: usable once the table is refreshed (auth.key_refresh_ms = 100).
  BOOST_REQUIRE(answers_soon(herald, "/v1/dead-letters", reader, 200));
  auto refused = call(herald, "POST", "/v1/messages", reader, message("reset-4"));
  BOOST_TEST(refused.status == 403);
  BOOST_TEST(error_code(refused) == "forbidden");
  BOOST_TEST(call(herald, "POST", "/v1/dead-letters/tsk_1/replay", reader).status == 403);

  auto listed = run_herald({"keys", "list", "--db", database});
  BOOST_REQUIRE_EQUAL(listed.exit_code, 0);
  BOOST_TEST(listed.out.find(reader) == std::string::npos); // never the key itself
  auto reader_id = reader.substr(3, 16);
  BOOST_TEST(listed.out.find(reader_id + "\t" + tenant_a + "\tread\t") != std::string::npos,
             listed.out);

  BOOST_REQUIRE_EQUAL(run_herald({"keys", "revoke", reader_id, "--db", database}).exit_code, 0);
  BOOST_TEST(answers_soon(herald, "/v1/dead-letters", reader, 401));
  BOOST_TEST(run_herald({"keys", "revoke", reader_id, "--db", database}).exit_code == 1);
}

BOOST_AUTO_TEST_CASE(bad_key_arguments_exit_two) {
  temp_dir dir("herald-e2e-keys");
  auto database = "sqlite:" + dir.file("herald.db");
  auto bad_scope =
      run_herald({"keys", "create", "--tenant", "t", "--scopes", "root", "--db", database});
  BOOST_TEST(bad_scope.exit_code == 2);
  BOOST_TEST(run_herald({"keys", "create", "--scopes", "read", "--db", database}).exit_code == 2);
  BOOST_TEST(run_herald({"keys", "frobnicate"}).exit_code == 2);
}

BOOST_FIXTURE_TEST_CASE(node_wide_figures_need_ops_and_open_metrics_are_logged, two_tenants) {
  // A tenant's admin key is still one tenant's: every tenant's provider calls need `ops`.
  for (const std::string target : {"/v1/channels", "/v1/cluster"}) {
    BOOST_TEST(call(herald, "GET", target, key_a).status == 403, target);
  }
  const auto operations = create_api_key(database, tenant_a, "ops");
  BOOST_REQUIRE(answers_soon(herald, "/v1/channels", operations, 200));
  BOOST_TEST(call(herald, "GET", "/v1/cluster", operations).status == 200);
  BOOST_TEST(call(herald, "GET", "/v1/stats", operations).status == 403);
  // Keys, and /metrics on the API listener without one: said at start.
  BOOST_TEST(logged_soon(herald, "herald.metrics_open"));
}

BOOST_AUTO_TEST_CASE(metrics_can_have_their_own_listener) {
  auto metrics_port = free_port();
  running_herald herald({}, keyed_config(R"("metrics_listen": "127.0.0.1:)" +
                                         std::to_string(metrics_port) + R"(",)"));
  BOOST_TEST(herald.get("/metrics").status == 404);
  auto scraped = request(host, metrics_port, "GET", "/metrics");
  BOOST_TEST(scraped.status == 200);
  // With keys and metrics on a listener of their own, nothing to warn of (the warning would
  // come right after herald.started).
  BOOST_REQUIRE(logged_soon(herald, "herald.started"));
  BOOST_TEST(herald.process().log().find("herald.metrics_open") == std::string::npos);
  BOOST_TEST(scraped.body.find("herald_messages_received_total") != std::string::npos);
  BOOST_TEST(request(host, metrics_port, "GET", "/v1/dead-letters").status == 404);
}

BOOST_AUTO_TEST_CASE(no_auth_on_a_network_address_exits_two) {
  temp_dir dir("herald-e2e-network");
  auto run = run_herald({"serve", "--listen", "0.0.0.0:" + std::to_string(free_port()), "--db",
                         "sqlite:" + dir.file("herald.db")});
  BOOST_TEST(run.exit_code == 2);
  BOOST_TEST(run.err.find("auth.mode") != std::string::npos, run.err);
  BOOST_TEST(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

BOOST_AUTO_TEST_CASE(auth_settings_are_checked_at_start) {
  temp_dir dir("herald-e2e-auth-config");
  auto database = "sqlite:" + dir.file("herald.db");
  write_file(dir.file("bad.json"), R"({"auth": {"mode": "basic"}, "channels": [{"name": "sms"}]})");
  auto bad = run_herald({"serve", "--config", dir.file("bad.json"), "--db", database});
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(bad.err.find("auth.mode") != std::string::npos, bad.err);

  // Explicitly allowed: open on every interface.
  write_file(dir.file("open.json"), R"({"auth": {"allow_unauthenticated_on_network": true},
                                        "channels": [{"name": "sms"}]})");
  auto port = free_port();
  herald_process herald({"serve", "--config", dir.file("open.json"), "--listen",
                         "0.0.0.0:" + std::to_string(port), "--db", database},
                        dir.file("herald.log"));
  BOOST_TEST(herald.wait_ready(host, port), herald.log());
  // ... and said once, right after herald.started.
  const std::string warning = "herald.unauthenticated_on_network";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (herald.log().find(warning) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // polling a condition, bounded
  const auto log = herald.log();
  const auto first = log.find(warning);
  BOOST_TEST(first != std::string::npos, log);
  BOOST_TEST(log.find(warning, first + 1) == std::string::npos, log);
  BOOST_TEST(herald.stop() == 0);
}

BOOST_AUTO_TEST_CASE(the_embedded_default_takes_the_readme_requests_without_a_key) {
  running_herald herald({}); // embedded config: loopback, auth none
  auto accepted = herald.post(R"({
    "biz_type": "ORDER_SHIPPED", "biz_id": "order-20260907-001", "user_id": "u-123",
    "channels": ["sms", "wechat", "app"],
    "to": {"sms": "+8613800000000", "wechat": "oAbC123", "app": "device-token-1"},
    "template": "order_shipped", "params": {"order_no": "20260907-001"}})");
  BOOST_REQUIRE_EQUAL(accepted.status, 202);
  auto message_id = text(json::parse(accepted.body).at("message_id"));
  BOOST_TEST(herald.get("/v1/messages/" + message_id).status == 200);
  BOOST_TEST(herald.get("/metrics").status == 200);
}

BOOST_AUTO_TEST_SUITE_END()

// The same on PostgreSQL (scripts/with-postgres.sh provides a server).
BOOST_AUTO_TEST_SUITE(auth_postgres_tests,
                      *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

BOOST_FIXTURE_TEST_CASE(a_tenant_cannot_read_list_or_replay_another_tenants_messages,
                        two_tenants_on_postgres) {
  tenants_are_isolated(*this);
}

BOOST_FIXTURE_TEST_CASE(ids_computed_from_business_data_find_nothing, two_tenants_on_postgres) {
  computed_ids_find_nothing(*this);
}

BOOST_AUTO_TEST_SUITE_END()
