// An fcm channel against the built binary: herald trades a signed assertion for an OAuth 2.0
// token at the service account's token_uri (a local FCM fake) and sends through FCM HTTP v1; a
// task ends SENT with FCM's name for the message, or FAILED with FCM's reason.

#include "support/fake_provider_server.hpp"
#include "support/herald_server.hpp"
#include "support/jws_test_keys.hpp"
#include "tools/fcm_fake.hpp"

#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using herald::tools::fcm_fake;

BOOST_AUTO_TEST_SUITE(fcm_tests)

BOOST_AUTO_TEST_CASE(a_task_ends_sent_with_fcms_name_or_failed_with_fcms_reason) {
  fcm_fake fake{fcm_fake::options{}};
  auto server = serve(fake);
  temp_dir dir{"herald-e2e-fcm"};
  const auto key_file = dir.file("service-account.json");
  write_file(key_file, service_account_file(shared_rsa_key(), server->url("/token")));
  running_herald herald{"", R"({"channels":[{"name":"app","type":"fcm","service_account_file":")" +
                                key_file + R"(","base_url":")" + server->url("") +
                                R"(","timeout_ms":2000}]})"};
  fake.unregister("device-gone");

  const auto sent_id = submit_to(herald, "app", "order-1", "device-1");
  BOOST_REQUIRE_MESSAGE(first_task_reaches(herald, sent_id, "SENT"), herald.process().log());
  const auto sent = fake.sent();
  BOOST_REQUIRE_EQUAL(sent.size(), 1u);
  const auto task = first_task(herald, sent_id);
  BOOST_TEST(task.at("provider_message_id").as_string() == sent[0].name);
  BOOST_TEST(task.at("provider_request_id").as_string() == sent[0].herald_request_id);
  BOOST_TEST(sent[0].device_token == "device-1");

  const auto failed_id = submit_to(herald, "app", "order-2", "device-gone");
  BOOST_REQUIRE_MESSAGE(first_task_reaches(herald, failed_id, "FAILED"), herald.process().log());
  const std::string reason{first_task(herald, failed_id).at("last_error").as_string()};
  BOOST_TEST(reason.find("fcm UNREGISTERED (HTTP 404)") == 0u, reason);
  BOOST_TEST(fake.token_requests() == 1u);
  // Neither the service account's key nor the access token is ever logged.
  const auto log = herald.process().log();
  BOOST_TEST(log.find("ya29.") == std::string::npos);
  BOOST_TEST(!quotes_pem_body(log, private_key_pem(shared_rsa_key())));
}

BOOST_AUTO_TEST_SUITE_END()
