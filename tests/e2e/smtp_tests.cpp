// An smtp channel against the built binary: herald hands each task to a local SMTP fake as a
// MIME message whose Message-ID is the task's provider request id, records that id as the
// provider message id, and fails a recipient the server refuses (550) at once.

#include "support/herald_server.hpp"
#include "tools/smtp_fake.hpp"

#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;
using herald::tools::smtp_fault;

namespace {

std::string smtp_config(const herald::tools::smtp_fake_server& server) {
  return R"({"channels":[{"name":"email","type":"smtp","url":")" + server.url() +
         R"(","from":"notify@shop.example.com","from_name":"Shop","require_tls":false,)"
         R"("timeout_ms":2000,"retry":{"schedule_ms":[200],"max_attempts":3}}]})";
}

std::string submit(running_herald& herald, const std::string& biz_id, const std::string& to) {
  json::object body{{"biz_type", "ORDER_SHIPPED"},
                    {"biz_id", biz_id},
                    {"user_id", "u-" + biz_id},
                    {"channels", json::array{"email"}},
                    {"to", {{"email", to}}},
                    {"content", {{"title", "订单已发货"}, {"body", "Order " + biz_id}}}};
  auto response = herald.post(json::serialize(body));
  BOOST_REQUIRE_EQUAL(response.status, 202);
  return std::string(json::parse(response.body).at("message_id").as_string());
}

} // namespace

BOOST_AUTO_TEST_SUITE(smtp_tests)

BOOST_AUTO_TEST_CASE(an_smtp_channel_sends_a_message_whose_id_is_the_provider_request_id) {
  herald::tools::smtp_fake fake{herald::tools::smtp_fake::options{}};
  herald::tools::smtp_fake_server server{fake};
  running_herald herald{"", smtp_config(server)};
  const auto id = submit(herald, "order-1", "buyer@example.com");
  const auto task = wait_for_status(herald, id, "SENT");
  const std::string request_id(task.at("provider_request_id").as_string());
  BOOST_TEST(task.at("provider_message_id").as_string() == request_id + "@shop.example.com");
  const auto received = fake.received();
  BOOST_REQUIRE_EQUAL(received.size(), 1u);
  BOOST_TEST(received[0].recipients.at(0) == "buyer@example.com");
  BOOST_TEST(received[0].data.find("Message-ID: <" + request_id + "@shop.example.com>\r\n") !=
             std::string::npos);
  BOOST_TEST(received[0].data.find("Subject: =?UTF-8?B?") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_refused_recipient_fails_the_task_and_a_busy_server_is_retried) {
  herald::tools::smtp_fake fake{herald::tools::smtp_fake::options{}};
  herald::tools::smtp_fake_server server{fake};
  fake.script({{smtp_fault::kind::reply_at_rcpt, 550, "5.1.1 no such user"},
               {smtp_fault::kind::reply_at_rcpt, 451, "4.3.0 try again"}});
  running_herald herald{"", smtp_config(server)};
  const auto refused = submit(herald, "order-2", "gone@example.com");
  const auto failed = wait_for_status(herald, refused, "FAILED");
  BOOST_TEST(std::string(failed.at("last_error").as_string()).find("SMTP 550 5.1.1") == 0u);
  const auto busy = submit(herald, "order-3", "buyer@example.com");
  const auto sent = wait_for_status(herald, busy, "SENT");
  BOOST_TEST(sent.at("attempts").as_int64() == 2);
  BOOST_TEST(fake.received().size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
