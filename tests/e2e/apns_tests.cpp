// An apns channel against the built binary: herald signs an ES256 provider token with the .p8
// key and sends over HTTP/2 (with prior knowledge, to a local APNs fake); a task ends SENT with
// the apns-id, or FAILED with APNs's reason.

#include "support/fake_provider_server.hpp"
#include "support/herald_server.hpp"
#include "support/jws_test_keys.hpp"
#include "tools/apns_fake.hpp"

#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using herald::tools::apns_fake;

namespace {

const std::string device_1(64, 'a');
const std::string device_gone(64, 'b');

std::string header_of(const herald::tools::apns_sent& sent, const std::string& name) {
  for (const auto& [key, value] : sent.headers)
    if (key == name)
      return value;
  return {};
}

} // namespace

BOOST_AUTO_TEST_SUITE(apns_tests)

BOOST_AUTO_TEST_CASE(a_task_ends_sent_with_the_apns_id_or_failed_with_apns_reason) {
  apns_fake fake{apns_fake::options{}};
  auto server = serve_h2c(fake);
  temp_dir dir{"herald-e2e-apns"};
  const auto key_file = dir.file("AuthKey_FAKEKEY001.p8");
  const auto key = generate_ec_key("P-256");
  write_file(key_file, private_key_pem(key.get()));
  running_herald herald{"", R"({"channels":[{"name":"ios","type":"apns","key_file":")" + key_file +
                                R"(","key_id":"FAKEKEY001","team_id":"FAKETEAM01",)"
                                R"("topic":"org.herald.fake","base_url":")" +
                                server->url("") + R"(","timeout_ms":2000}]})"};
  fake.unregister(device_gone, 1764547200000);

  const auto sent_id = submit_to(herald, "ios", "order-1", device_1);
  BOOST_REQUIRE_MESSAGE(first_task_reaches(herald, sent_id, "SENT"), herald.process().log());
  const auto sent = fake.sent();
  BOOST_REQUIRE_EQUAL(sent.size(), 1u);
  BOOST_TEST(sent[0].protocol == "HTTP/2");
  const auto task = first_task(herald, sent_id);
  BOOST_TEST(task.at("provider_message_id").as_string() == sent[0].apns_id);
  BOOST_TEST(header_of(sent[0], "apns-id") == sent[0].apns_id);
  BOOST_TEST(header_of(sent[0], "apns-collapse-id") == task.at("provider_request_id").as_string());
  BOOST_TEST(header_of(sent[0], "apns-topic") == "org.herald.fake");
  BOOST_TEST(header_of(sent[0], "apns-push-type") == "alert");
  BOOST_TEST(verify_jws(public_key_pem(key.get()), sent[0].provider_token));

  const auto failed_id = submit_to(herald, "ios", "order-2", device_gone);
  BOOST_REQUIRE_MESSAGE(first_task_reaches(herald, failed_id, "FAILED"), herald.process().log());
  const std::string reason{first_task(herald, failed_id).at("last_error").as_string()};
  BOOST_TEST(reason == "apns Unregistered (HTTP 410): inactive since 2025-12-01T00:00:00.000000Z",
             reason);
  // Neither the key nor the provider token is ever logged.
  const auto log = herald.process().log();
  BOOST_TEST(log.find(sent[0].provider_token) == std::string::npos);
  BOOST_TEST(!quotes_pem_body(log, private_key_pem(key.get())));
}

BOOST_AUTO_TEST_SUITE_END()
