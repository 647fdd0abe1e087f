#include "domain/time.hpp"
#include "observability/metrics.hpp"
#include "providers/apns_provider.hpp"
#include "support/adapter_calls.hpp"
#include "support/fake_provider_server.hpp"
#include "support/jws_test_keys.hpp"
#include "tools/apns_fake.hpp"

#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

using answers = test::provider_answers;

/// Wall time that moves only when a test says so, read from any thread (the adapter signs on
/// the caller's or the client's thread, the fake reads it on the server's).
class test_clock final : public domain::clock {
public:
  domain::timestamp now() const override {
    return domain::timestamp{std::chrono::microseconds{micros_.load()}};
  }
  std::int64_t unix_seconds() const { return micros_.load() / 1000000; }
  void advance(std::chrono::seconds by) { micros_ += by.count() * 1000000; }

private:
  std::atomic<std::int64_t> micros_{std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count()};
};

const test::test_key& signing_key_pair() {
  static const auto key = test::generate_ec_key("P-256");
  return key;
}

/// An APNs device token: 32 bytes in hexadecimal.
std::string device(int n) {
  auto text = std::to_string(n);
  return std::string(64 - text.size(), 'a') + text;
}

struct apns_fixture {
  std::shared_ptr<test_clock> clock = std::make_shared<test_clock>();
  tools::apns_fake fake{fake_options()};
  std::unique_ptr<tools::h2c_server> server = test::serve_h2c(fake);
  std::shared_ptr<metrics> counters = std::make_shared<metrics>();
  apns_config config = make_config();
  std::shared_ptr<apns_account> account = std::make_shared<apns_account>(config, counters, clock);
  apns_provider adapter{"ios", config, account, counters};

  tools::apns_fake::options fake_options() const {
    tools::apns_fake::options o;
    o.unix_now = [clock = clock] { return clock->unix_seconds(); };
    return o;
  }

  apns_config make_config() const {
    apns_config c;
    c.private_key_pem = test::private_key_pem(signing_key_pair().get());
    c.key_id = "FAKEKEY001";
    c.team_id = "FAKETEAM01";
    c.topic = "org.herald.fake";
    c.base_url = server->url("");
    c.timeout = 2000ms;
    return c;
  }

  static provider_request request(int n, const std::string& to = device(1)) {
    return test::numbered_request(n, "ios", to);
  }

  provider_result send_one(int n, const std::string& to = device(1)) {
    return test::send_and_wait(adapter, request(n, to));
  }

  bool counted(const std::string& sample) const {
    return counters->render().find(sample) != std::string::npos;
  }
};

std::string header_of(const tools::apns_sent& sent, const std::string& name) {
  for (const auto& [key, value] : sent.headers)
    if (key == name)
      return value;
  return {};
}

using golden_row = test::golden_row<tools::apns_fault>;

} // namespace

BOOST_FIXTURE_TEST_SUITE(apns_adapter_tests, apns_fixture)

BOOST_AUTO_TEST_CASE(a_send_goes_over_http2_with_the_apns_headers_and_returns_the_apns_id) {
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::success), result.detail);
  const auto sent = fake.sent();
  BOOST_REQUIRE_EQUAL(sent.size(), 1u);
  BOOST_TEST(sent[0].protocol == "HTTP/2");
  BOOST_TEST(sent[0].device_token == device(1));
  BOOST_TEST(header_of(sent[0], "apns-id") == apns_id_for("hrq_1"));
  BOOST_TEST(result.detail == apns_id_for("hrq_1")); // the apns-id APNs answered
  BOOST_TEST(header_of(sent[0], "apns-collapse-id") == "hrq_1");
  BOOST_TEST(header_of(sent[0], "apns-topic") == "org.herald.fake");
  BOOST_TEST(header_of(sent[0], "apns-push-type") == "alert");
  BOOST_TEST(header_of(sent[0], "apns-priority") == "10");
  const auto payload = json::parse(sent[0].payload).as_object();
  const auto& alert = payload.at("aps").at("alert").as_object();
  BOOST_TEST(alert.at("title").as_string() == "Order shipped");
  BOOST_TEST(alert.at("body").as_string() == "Order 1 is on its way");
}

BOOST_AUTO_TEST_CASE(the_provider_token_is_an_es256_jwt_of_the_key_and_team) {
  send_one(1);
  const auto tokens = fake.provider_tokens();
  BOOST_REQUIRE_EQUAL(tokens.size(), 1u);
  BOOST_TEST(test::verify_jws(test::public_key_pem(signing_key_pair().get()), tokens[0]));
  const auto header = test::jws_json(tokens[0], 0);
  const auto claims = test::jws_json(tokens[0], 1);
  BOOST_TEST(header.at("alg").as_string() == "ES256");
  BOOST_TEST(header.at("kid").as_string() == "FAKEKEY001");
  BOOST_TEST(claims.at("iss").as_string() == "FAKETEAM01");
  BOOST_TEST(claims.at("iat").as_int64() == clock->unix_seconds());
  BOOST_TEST(counted(R"(herald_provider_token_refreshes_total{account="FAKEKEY001",)"
                     R"(provider="apns"} 1)"));
}

BOOST_AUTO_TEST_CASE(apns_ids_are_version_5_uuids_of_the_provider_request_id) {
  // RFC 9562 appendix A.4: the DNS namespace and "www.example.com".
  const std::string dns_namespace{
      "\x6b\xa7\xb8\x10\x9d\xad\x11\xd1\x80\xb4\x00\xc0\x4f\xd4\x30\xc8", 16};
  BOOST_TEST(name_based_uuid(dns_namespace, "www.example.com") ==
             "2ed6657d-e927-568b-95e1-2665a8aea6a2");
  const auto id = apns_id_for("hrq_0123456789abcdef0123456789abcdef");
  BOOST_TEST(id == apns_id_for("hrq_0123456789abcdef0123456789abcdef"));
  BOOST_TEST(id != apns_id_for("hrq_0123456789abcdef0123456789abcdee"));
  BOOST_TEST(id.size() == 36u);
  BOOST_TEST(id[14] == '5');
}

BOOST_AUTO_TEST_CASE(the_golden_error_table_end_to_end_the_reason_before_the_status) {
  send_one(0);
  const std::vector<golden_row> table{
      {tools::apns_fault::bad_device_token, call_outcome::permanent,
       "apns BadDeviceToken (HTTP 400)", false, std::nullopt},
      {tools::apns_fault::unregistered, call_outcome::permanent,
       "apns Unregistered (HTTP 410): inactive since ", false, std::nullopt},
      // HTTP 400 like a bad device token, but the reason blames the configured topic
      {tools::apns_fault::topic_disallowed, call_outcome::permanent,
       "apns TopicDisallowed (HTTP 400)", true, std::nullopt},
      {tools::apns_fault::payload_too_large, call_outcome::permanent,
       "apns PayloadTooLarge (HTTP 413)", false, std::nullopt},
      // HTTP 429 for one device token: retried, the channel is not paused
      {tools::apns_fault::too_many_requests, call_outcome::retryable,
       "apns TooManyRequests (HTTP 429)", false, std::nullopt},
      {tools::apns_fault::too_many_provider_token_updates, call_outcome::throttled,
       "apns TooManyProviderTokenUpdates (HTTP 429)", false, 5000ms},
      {tools::apns_fault::internal_server_error, call_outcome::retryable,
       "apns InternalServerError (HTTP 500)", false, std::nullopt},
      {tools::apns_fault::service_unavailable, call_outcome::retryable,
       "apns ServiceUnavailable (HTTP 503)", false, 5000ms},
  };
  test::check_golden_table(
      table, [&](tools::apns_fault fault) { fake.script({fault}); },
      [&](int n) { return send_one(n); },
      [&](int errors) {
        return counted(R"(herald_provider_config_errors_total{channel="ios"} )" +
                       std::to_string(errors));
      });
  BOOST_TEST(fake.provider_tokens().size() == 1u); // no error above was the token's
}

BOOST_AUTO_TEST_CASE(an_inactive_device_token_fails_naming_since_when) {
  fake.unregister(device(7), 1764547200000); // 2025-12-01T00:00:00Z
  const auto result = send_one(1, device(7));
  BOOST_TEST((result.outcome == call_outcome::permanent));
  BOOST_TEST(result.detail ==
             "apns Unregistered (HTTP 410): inactive since 2025-12-01T00:00:00.000000Z");
  BOOST_TEST((send_one(2, device(8)).outcome == call_outcome::success));
}

BOOST_AUTO_TEST_CASE(a_token_expiring_mid_run_is_signed_again_exactly_once_for_many_sends) {
  send_one(0);
  clock->advance(std::chrono::minutes{21});
  fake.expire_tokens(); // APNs's clock says an hour has passed
  answers got;
  for (int i = 1; i <= 300; ++i)
    adapter.send(request(i, device(i)), got.collect());
  BOOST_REQUIRE(got.wait_for(300));
  BOOST_TEST(got.count(call_outcome::success) == 300u);
  BOOST_TEST(fake.provider_tokens().size() == 2u); // the first, and one new
  BOOST_TEST(fake.sent().size() == 301u);
  BOOST_TEST(counted(R"(herald_provider_token_refreshes_total{account="FAKEKEY001",)"
                     R"(provider="apns"} 2)"));
}

BOOST_AUTO_TEST_CASE(a_token_refused_within_20_minutes_is_not_replaced_until_they_pass) {
  send_one(0);
  fake.script({tools::apns_fault::invalid_provider_token});
  const auto refused = send_one(1);
  BOOST_TEST((refused.outcome == call_outcome::retryable));
  BOOST_TEST(refused.detail.find("within 20 minutes") != std::string::npos, refused.detail);
  const auto calls = fake.send_requests();
  BOOST_TEST((send_one(2).outcome == call_outcome::retryable)); // not even sent: no token
  BOOST_TEST(fake.send_requests() == calls);
  clock->advance(std::chrono::minutes{20});
  BOOST_TEST((send_one(3).outcome == call_outcome::success));
  BOOST_TEST(fake.provider_tokens().size() == 2u); // APNs never saw an update too soon
}

BOOST_AUTO_TEST_CASE(a_token_is_replaced_after_50_minutes_before_apns_refuses_it) {
  send_one(0);
  clock->advance(std::chrono::minutes{49});
  send_one(1);
  BOOST_TEST(fake.provider_tokens().size() == 1u);
  clock->advance(std::chrono::minutes{2});
  BOOST_TEST((send_one(2).outcome == call_outcome::success));
  BOOST_TEST(fake.provider_tokens().size() == 2u);
  BOOST_TEST(fake.send_requests() == 3u); // no call was refused on the way
}

BOOST_AUTO_TEST_CASE(answers_lost_after_the_request_arrived_are_outcome_unknown) {
  send_one(0);
  fake.script(
      {tools::apns_fault::truncated, tools::apns_fault::dropped, tools::apns_fault::garbage});
  for (int n = 1; n <= 3; ++n) {
    const auto result = send_one(n);
    BOOST_TEST((result.outcome == call_outcome::timeout), n << ": " << result.detail);
  }
  BOOST_TEST(fake.sent().size() == 1u);
  BOOST_TEST((send_one(4).outcome == call_outcome::success));
}

BOOST_AUTO_TEST_CASE(a_reply_slower_than_the_timeout_is_outcome_unknown) {
  send_one(0);
  fake.script({tools::apns_fault::hang});
  test::check_unanswered_times_out([&] { return send_one(1); }, config.timeout);
}

BOOST_AUTO_TEST_CASE(configuration_is_checked_in_one_line_without_the_key) {
  auto c = config;
  c.private_key_pem = test::private_key_pem(test::shared_rsa_key());
  const auto problem = c.validate();
  BOOST_TEST(problem.rfind("apns key: ", 0) == 0u, problem);
  BOOST_TEST(problem.find('\n') == std::string::npos);
  BOOST_TEST(!test::quotes_pem_body(problem, c.private_key_pem));
  BOOST_CHECK_THROW(apns_account(c, counters, clock), std::invalid_argument);
  c = config;
  c.push_type = "background";
  BOOST_TEST(c.validate() == "apns push_type must be alert or voip");
  c = config;
  c.topic = "org.herald.fake\r\nx-injected: 1";
  BOOST_TEST(c.validate() == "apns topic is required (the app's bundle id, without spaces)");
}

BOOST_AUTO_TEST_SUITE_END()
