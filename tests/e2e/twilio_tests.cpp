// An sms_twilio channel against the built binary: herald sends through a local Twilio fake
// (the Messages API's wire format), signed status callbacks move tasks SENT -> DELIVERED or
// UNDELIVERED, and an undelivered SMS fails over to the channel's fallback, once.

#include "support/eventually.hpp"
#include "support/fake_provider_server.hpp"
#include "support/herald_server.hpp"
#include "tools/twilio_fake.hpp"

#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;
using herald::tools::twilio_fake;

namespace {

const std::string callback_url = "https://herald.example.com/v1/receipts/sms";

std::string twilio_config(const test_server& fake) {
  return R"({"channels":[{"name":"sms","type":"sms_twilio",)"
         R"("account_sid":"AC00000000000000000000000000000001","auth_token":"fake-auth-token",)"
         R"("sender":"+15005550006","base_url":")" +
         fake.url("") + R"(","status_callback_url":")" + callback_url +
         R"(","timeout_ms":2000,"receipt_window_ms":600000,"fallback":"app"},)"
         R"({"name":"app","type":"simulated"}]})";
}

std::string submit(running_herald& herald, int n) {
  json::object body{{"biz_type", "SMS"},
                    {"biz_id", "otp-" + std::to_string(n)},
                    {"user_id", "u-" + std::to_string(n)},
                    {"channels", json::array{"sms"}},
                    {"to", {{"sms", "+861380000000" + std::to_string(n)}, {"app", "device-1"}}},
                    {"content", {{"body", "Your code is 1234"}}}};
  auto response = herald.post(json::serialize(body));
  BOOST_REQUIRE_EQUAL(response.status, 202);
  return std::string(json::parse(response.body).at("message_id").as_string());
}

json::array tasks_of(running_herald& herald, const std::string& message_id) {
  auto response = herald.get("/v1/messages/" + message_id);
  BOOST_REQUIRE_EQUAL(response.status, 200);
  return json::parse(response.body).at("tasks").as_array();
}

std::string sms_status(running_herald& herald, const std::string& message_id) {
  for (const auto& task : tasks_of(herald, message_id))
    if (task.at("channel").as_string() == "sms")
      return std::string(task.at("status").as_string());
  return {};
}

http_response report(running_herald& herald, const twilio_fake& fake,
                     herald::tools::twilio_sent message) {
  auto cb = fake.status_callback(message);
  return request(host, herald.port(), "POST", "/v1/receipts/sms", cb.body,
                 {{"Content-Type", "application/x-www-form-urlencoded"},
                  {"X-Twilio-Signature", cb.signature}});
}

} // namespace

BOOST_AUTO_TEST_SUITE(twilio_tests)

BOOST_AUTO_TEST_CASE(status_callbacks_end_tasks_and_an_undelivered_sms_fails_over_once) {
  twilio_fake fake{twilio_fake::options{}};
  auto server = serve(fake);
  running_herald herald{"", twilio_config(*server)};
  const std::vector<std::string> ids{submit(herald, 1), submit(herald, 2)};
  BOOST_REQUIRE(eventually([&] { return fake.sent().size() == 2; }));
  BOOST_REQUIRE(eventually([&] { return sms_status(herald, ids[1]) == "SENT"; }));
  BOOST_REQUIRE(eventually([&] { return sms_status(herald, ids[0]) == "SENT"; }));
  auto sent = fake.sent();
  auto by_number = [&](const std::string& to) {
    for (const auto& m : sent)
      if (m.to == to)
        return m;
    BOOST_FAIL("no message to " + to);
    return sent.front();
  };
  auto first = by_number("+8613800000001");
  auto second = by_number("+8613800000002");

  first.status = "sent"; // an intermediate status: acknowledged, nothing changes
  BOOST_TEST(report(herald, fake, first).status == 200);
  BOOST_TEST(sms_status(herald, ids[0]) == "SENT");
  first.status = "delivered";
  BOOST_TEST(report(herald, fake, first).status == 200);
  BOOST_TEST(sms_status(herald, ids[0]) == "DELIVERED");
  BOOST_TEST(tasks_of(herald, ids[0]).size() == 1u);

  second.status = "undelivered";
  second.error_code = 30003;
  BOOST_TEST(report(herald, fake, second).status == 200);
  BOOST_TEST(report(herald, fake, second).status == 200); // Twilio may report it twice
  BOOST_TEST(sms_status(herald, ids[1]) == "UNDELIVERED");
  BOOST_REQUIRE(eventually([&] {
    for (const auto& task : tasks_of(herald, ids[1]))
      if (task.at("channel").as_string() == "app" && task.at("status").as_string() == "SENT")
        return true;
    return false;
  }));
  BOOST_TEST(tasks_of(herald, ids[1]).size() == 2u); // one fallback task, not two
  BOOST_TEST(fake.sent().size() == 2u);              // and sms was not sent again

  auto forged = fake.status_callback(first);
  BOOST_TEST(request(host, herald.port(), "POST", "/v1/receipts/sms", forged.body,
                     {{"Content-Type", "application/x-www-form-urlencoded"},
                      {"X-Twilio-Signature", "bm90IGEgc2lnbmF0dXJl"}})
                 .status == 401);

  // Status callbacks are POSTs: a 405 names the method allowed (RFC 9110 §15.5.6).
  const auto get = request(host, herald.port(), "GET", "/v1/receipts/sms");
  BOOST_TEST(get.status == 405);
  BOOST_TEST(get.header("Allow") == "POST");
  BOOST_TEST(get.header("Content-Type") == "application/json");
}

BOOST_AUTO_TEST_CASE(an_unsubscribed_number_fails_the_task_with_twilios_reason) {
  twilio_fake fake{twilio_fake::options{}};
  auto server = serve(fake);
  fake.unsubscribe("+8613800000003");
  running_herald herald{"", twilio_config(*server)};
  const auto id = submit(herald, 3);
  BOOST_REQUIRE(eventually([&] { return sms_status(herald, id) == "FAILED"; }));
  for (const auto& task : tasks_of(herald, id))
    if (task.at("channel").as_string() == "sms")
      BOOST_TEST(std::string(task.at("last_error").as_string()).find("21610") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
