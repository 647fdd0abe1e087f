#include "observability/metrics.hpp"
#include "providers/fcm_provider.hpp"
#include "support/adapter_calls.hpp"
#include "support/fake_provider_server.hpp"
#include "support/jws_test_keys.hpp"
#include "tools/fcm_fake.hpp"

#include <chrono>
#include <optional>
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

const std::string& public_pem() {
  static const std::string pem = test::public_key_pem(test::shared_rsa_key());
  return pem;
}

struct fcm_fixture {
  tools::fcm_fake fake{tools::fcm_fake::options{}};
  std::unique_ptr<test::test_server> server = test::serve(fake);
  std::shared_ptr<metrics> counters = std::make_shared<metrics>();
  fcm_config config = make_config();
  std::shared_ptr<fcm_account> account = std::make_shared<fcm_account>(config, counters);
  fcm_provider adapter{"app", config, account, counters};

  fcm_config make_config() const {
    fcm_config c;
    c.service_account_json =
        test::service_account_file(test::shared_rsa_key(), server->url("/token"));
    c.base_url = server->url("");
    c.timeout = 2000ms;
    return c;
  }

  static provider_request request(int n, const std::string& device = "fcm-device-token-1") {
    return test::numbered_request(n, "app", device);
  }

  provider_result send_one(int n, fcm_provider& through) {
    return test::send_and_wait(through, request(n));
  }
  provider_result send_one(int n) { return send_one(n, adapter); }

  bool counted(const std::string& sample) const {
    return counters->render().find(sample) != std::string::npos;
  }
};

using golden_row = test::golden_row<tools::fcm_fault>;

} // namespace

BOOST_FIXTURE_TEST_SUITE(fcm_adapter_tests, fcm_fixture)

BOOST_AUTO_TEST_CASE(a_send_carries_token_notification_and_request_id_and_returns_fcms_name) {
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::success));
  const auto sent = fake.sent();
  BOOST_REQUIRE_EQUAL(sent.size(), 1u);
  BOOST_TEST(result.detail == sent[0].name);
  BOOST_TEST(result.detail.rfind("projects/herald-fake/messages/0:", 0) == 0u);
  BOOST_TEST(sent[0].device_token == "fcm-device-token-1");
  BOOST_TEST(sent[0].title == "Order shipped");
  BOOST_TEST(sent[0].body == "Order 1 is on its way");
  BOOST_TEST(sent[0].herald_request_id == "hrq_1");
  BOOST_TEST(fake.token_requests() == 1u);
  send_one(2);
  BOOST_TEST(fake.token_requests() == 1u); // cached
  BOOST_TEST(counted(R"(herald_provider_token_refreshes_total{account="herald-sender@herald-fake.)"
                     R"(iam.gserviceaccount.com",provider="fcm"} 1)"));
}

BOOST_AUTO_TEST_CASE(the_assertion_is_signed_by_the_service_account_for_the_messaging_scope) {
  send_one(1);
  const auto assertions = fake.assertions();
  BOOST_REQUIRE_EQUAL(assertions.size(), 1u);
  BOOST_TEST(test::verify_jws(public_pem(), assertions[0]));
  const auto header = test::jws_json(assertions[0], 0);
  const auto claims = test::jws_json(assertions[0], 1);
  BOOST_TEST(header.at("kid").as_string() == "fake-key-id-1");
  BOOST_TEST(claims.at("iss").as_string() == "herald-sender@herald-fake.iam.gserviceaccount.com");
  BOOST_TEST(claims.at("aud").as_string() == server->url("/token"));
  BOOST_TEST(claims.at("scope").as_string() == fcm_scope);
  const auto requests = server->requests();
  BOOST_REQUIRE(!requests.empty());
  BOOST_TEST(requests[0].header("content-type") == "application/x-www-form-urlencoded");
  BOOST_TEST(requests[0].body.find("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-"
                                   "bearer&assertion=") == 0u);
  BOOST_TEST(requests.back().header("authorization") == "Bearer ya29.fake-token-1");
}

BOOST_AUTO_TEST_CASE(the_golden_error_table_end_to_end_the_error_code_before_the_status) {
  send_one(0); // holds a token
  const std::vector<golden_row> table{
      {tools::fcm_fault::unregistered, call_outcome::permanent, "fcm UNREGISTERED (HTTP 404)",
       false, std::nullopt},
      {tools::fcm_fault::invalid_argument, call_outcome::permanent,
       "fcm INVALID_ARGUMENT (HTTP 400)", false, std::nullopt},
      {tools::fcm_fault::sender_id_mismatch, call_outcome::permanent,
       "fcm SENDER_ID_MISMATCH (HTTP 403)", true, std::nullopt},
      // HTTP 401 like an expired access token, but the errorCode blames the APNs key: no refresh
      {tools::fcm_fault::third_party_auth_error, call_outcome::permanent,
       "fcm THIRD_PARTY_AUTH_ERROR (HTTP 401)", true, std::nullopt},
      {tools::fcm_fault::quota_exceeded, call_outcome::throttled, "fcm QUOTA_EXCEEDED (HTTP 429)",
       false, 7000ms},
      {tools::fcm_fault::unavailable, call_outcome::retryable, "fcm UNAVAILABLE (HTTP 503)", false,
       7000ms},
      {tools::fcm_fault::internal, call_outcome::retryable, "fcm INTERNAL (HTTP 500)", false,
       std::nullopt},
  };
  test::check_golden_table(
      table, [&](tools::fcm_fault fault) { fake.script({fault}); },
      [&](int n) { return send_one(n); },
      [&](int errors) {
        return counted(R"(herald_provider_config_errors_total{channel="app"} )" +
                       std::to_string(errors));
      });
  BOOST_TEST(fake.token_requests() == 1u); // no error above was the access token's
  BOOST_TEST(fake.sent().size() == 1u);
}

BOOST_AUTO_TEST_CASE(an_unregistered_device_token_fails_and_other_tokens_still_go) {
  fake.unregister("gone-device");
  answers got;
  adapter.send(request(1, "gone-device"), got.collect());
  adapter.send(request(2), got.collect());
  BOOST_REQUIRE(got.wait_for(2));
  BOOST_TEST(got.count(call_outcome::permanent) == 1u);
  BOOST_TEST(got.count(call_outcome::success) == 1u);
}

BOOST_AUTO_TEST_CASE(a_token_expiring_mid_run_is_refreshed_exactly_once_for_many_sends) {
  send_one(0);
  fake.expire_tokens();
  answers got;
  for (int i = 1; i <= 500; ++i)
    adapter.send(request(i), got.collect());
  BOOST_REQUIRE(got.wait_for(500));
  BOOST_TEST(got.count(call_outcome::success) == 500u);
  BOOST_TEST(fake.token_requests() == 2u); // the first, and one refresh
  BOOST_TEST(fake.sent().size() == 501u);
  BOOST_TEST(counted(R"(herald_provider_token_refreshes_total{account="herald-sender@herald-fake.)"
                     R"(iam.gserviceaccount.com",provider="fcm"} 2)"));
}

BOOST_AUTO_TEST_CASE(a_token_refused_twice_is_refreshed_once_then_left_to_the_retry_policy) {
  send_one(0);
  fake.script({tools::fcm_fault::unauthenticated, tools::fcm_fault::unauthenticated});
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::retryable));
  BOOST_TEST(result.detail.find("fcm UNAUTHENTICATED (HTTP 401)") == 0u, result.detail);
  BOOST_TEST(fake.token_requests() == 2u); // one refresh, no loop
}

BOOST_AUTO_TEST_CASE(refused_credentials_make_sends_wait_and_never_show_the_key) {
  fake.set_refusing_assertions(true);
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::retryable));
  BOOST_TEST(result.detail.find("invalid_grant") != std::string::npos, result.detail);
  BOOST_TEST(!test::quotes_pem_body(result.detail, test::private_key_pem(test::shared_rsa_key())));
  BOOST_TEST(fake.sent().empty());
  fake.set_refusing_assertions(false);
  // The refusal is held for 5 s: the next send waits without asking the endpoint again.
  BOOST_TEST((send_one(2).outcome == call_outcome::retryable));
  BOOST_TEST(fake.token_requests() == 1u);
}

BOOST_AUTO_TEST_CASE(another_project_is_a_configuration_error) {
  auto c = config;
  c.project_id = "someone-elses-project";
  fcm_provider other{"app", c, account, counters};
  const auto result = send_one(1, other);
  BOOST_TEST((result.outcome == call_outcome::permanent));
  BOOST_TEST(result.detail.find("fcm PERMISSION_DENIED (HTTP 403)") == 0u, result.detail);
  BOOST_TEST(counted(R"(herald_provider_config_errors_total{channel="app"} 1)"));
}

BOOST_AUTO_TEST_CASE(answers_lost_after_the_request_arrived_are_outcome_unknown) {
  send_one(0);
  fake.script({tools::fcm_fault::garbage, tools::fcm_fault::dropped});
  const auto garbage = send_one(1);
  BOOST_TEST((garbage.outcome == call_outcome::timeout), garbage.detail);
  const auto dropped = send_one(2);
  BOOST_TEST((dropped.outcome == call_outcome::timeout), dropped.detail);
  BOOST_TEST(fake.sent().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_success_cut_short_is_still_a_success_since_fcm_took_the_message) {
  // FCM does not deduplicate: calling it "unknown" would send the message a second time.
  send_one(0);
  fake.script({tools::fcm_fault::truncated});
  const auto result = send_one(1);
  BOOST_TEST((result.outcome == call_outcome::success));
  BOOST_TEST(result.detail.empty()); // FCM's name for it was lost with the rest of the answer
  BOOST_TEST(fake.sent().size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_reply_slower_than_the_timeout_is_outcome_unknown) {
  send_one(0);
  fake.script({tools::fcm_fault::hang});
  test::check_unanswered_times_out([&] { return send_one(1); }, config.timeout);
}

BOOST_AUTO_TEST_CASE(a_malformed_service_account_is_refused_in_one_line_without_the_key) {
  auto c = config;
  auto file = json::parse(c.service_account_json).as_object();
  file.erase("client_email");
  c.service_account_json = json::serialize(file);
  BOOST_TEST(c.validate() == "fcm service account: client_email is missing");
  file = json::parse(config.service_account_json).as_object();
  file["private_key"] = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
  c.service_account_json = json::serialize(file);
  const auto problem = c.validate();
  BOOST_TEST(problem.rfind("fcm service account: private_key: ", 0) == 0u, problem);
  BOOST_TEST(problem.find('\n') == std::string::npos);
  BOOST_CHECK_THROW(fcm_account(c, counters), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
