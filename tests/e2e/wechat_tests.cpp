// A wechat_template channel against the built binary: herald calls a local WeChat fake that
// follows WeChat's wire format, pauses on the daily quota (45009) and sends every task after
// the pause, and takes WeChat's signed TEMPLATESENDJOBFINISH pushes as receipts.

#include "support/eventually.hpp"
#include "support/fake_provider_server.hpp"
#include "support/herald_server.hpp"
#include "support/postgres.hpp"
#include "tools/wechat_fake.hpp"

#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;
using herald::tools::wechat_fake;

namespace {

const std::string callback_token = "push-token-of-the-test";

std::string wechat_config(const test_server& fake) {
  return R"({"channels":[{"name":"wechat","type":"wechat_template","appid":"wx-fake-app",)"
         R"("app_secret":"fake-app-secret","template_id":"tpl-order-shipped",)"
         R"("title_field":"first","body_field":"keyword1","base_url":")" +
         fake.url("") + R"(","callback_token":")" + callback_token +
         R"(","quota_pause_ms":1000,"timeout_ms":2000,"receipt_window_ms":600000}]})";
}

std::string submit(running_herald& herald, int n) {
  json::object body{{"biz_type", "WECHAT"},
                    {"biz_id", "order-" + std::to_string(n)},
                    {"user_id", "u-" + std::to_string(n)},
                    {"channels", json::array{"wechat"}},
                    {"to", {{"wechat", "o-user-" + std::to_string(n)}}},
                    {"content", {{"title", "Order shipped"}, {"body", "On its way"}}}};
  auto response = herald.post(json::serialize(body));
  BOOST_REQUIRE_EQUAL(response.status, 202);
  return std::string(json::parse(response.body).at("message_id").as_string());
}

std::string status_of(running_herald& herald, const std::string& message_id) {
  return std::string(first_task(herald, message_id).at("status").as_string());
}

http_response push(running_herald& herald, const std::string& msgid, const std::string& status,
                   const std::string& token = callback_token) {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto p = wechat_fake::finish_push(token, "o-user-1", msgid, status, now);
  return request(host, herald.port(), "POST", "/v1/receipts/wechat?" + p.query, p.body,
                 {{"Content-Type", "text/xml"}});
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// WeChat's signed URL handshake, as a gateway's access log would keep it: its query string
/// (without echostr) and herald's answer.
struct handshake {
  std::string query;
  http_response answer;
};

handshake check_url(running_herald& herald) {
  auto query = wechat_fake::finish_push(callback_token, "", "", "", unix_now()).query;
  return {query, herald.get("/v1/receipts/wechat?" + query + "&echostr=echo-1234")};
}

/// A forged "failed:user block" push for `msgid` posted under a signed query lifted from a log.
http_response forged_push(running_herald& herald, const std::string& signed_query,
                          const std::string& msgid) {
  auto forged =
      wechat_fake::finish_push("not-the-token", "o-user-1", msgid, "failed:user block", unix_now());
  return request(host, herald.port(), "POST", "/v1/receipts/wechat?" + signed_query, forged.body,
                 {{"Content-Type", "text/xml"}});
}

/// The handshake's query, lifted from node `first`'s log and replayed with a forged body on
/// node `second` (another process on the same database): refused.
void a_handshake_replayed_on(running_herald& first, running_herald& second) {
  const auto lifted = check_url(first);
  BOOST_REQUIRE_EQUAL(lifted.answer.status, 200);
  const auto refused = forged_push(second, lifted.query, "3662956322040938501");
  BOOST_TEST(refused.status == 401);
  BOOST_TEST(refused.body.find("replayed_signature") != std::string::npos, refused.body);
  BOOST_TEST(metric_sum(second.metrics(), "herald_receipts_rejected_total",
                        {"reason=\"replayed_signature\""}) == 1.0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(wechat_tests)

BOOST_AUTO_TEST_CASE(the_daily_quota_pauses_the_channel_and_every_task_is_sent_after_it) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  fake.set_quota_exhausted(true);
  running_herald herald{"", wechat_config(*server)};
  std::vector<std::string> ids;
  for (int n = 0; n < 5; ++n)
    ids.push_back(submit(herald, n));
  BOOST_REQUIRE(eventually([&] { return fake.send_requests() >= 1; }));
  BOOST_TEST(status_of(herald, ids[0]) != "FAILED");
  fake.set_quota_exhausted(false);
  const bool all_sent = eventually([&] {
    for (const auto& id : ids)
      if (status_of(herald, id) != "SENT")
        return false;
    return true;
  });
  std::string states;
  for (const auto& id : ids)
    states += status_of(herald, id) + " ";
  BOOST_REQUIRE_MESSAGE(all_sent, states + herald.process().log());
  const auto sent = fake.sent();
  BOOST_TEST(sent.size() == 5u); // each once, none lost
  std::set<std::string> msgids;
  for (const auto& message : sent)
    msgids.insert(message.msgid);
  for (const auto& id : ids) {
    const auto task = first_task(herald, id);
    BOOST_TEST(msgids.count(std::string(task.at("provider_message_id").as_string())) == 1u);
  }
  BOOST_TEST(
      metric_sum(herald.metrics(), "herald_provider_calls_total", {"outcome=\"throttled\""}) >= 1);
}

BOOST_AUTO_TEST_CASE(finish_pushes_end_tasks_delivered_or_undelivered_and_forged_ones_are_refused) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  running_herald herald{"", wechat_config(*server)};
  std::vector<std::string> ids{submit(herald, 1), submit(herald, 2), submit(herald, 3)};
  BOOST_REQUIRE(eventually([&] { return fake.sent().size() == 3; }));
  BOOST_REQUIRE(eventually([&] { return status_of(herald, ids[2]) == "SENT"; }));
  auto msgid = [&](const std::string& id) {
    BOOST_REQUIRE(
        eventually([&] { return first_task(herald, id).contains("provider_message_id"); }));
    return std::string(first_task(herald, id).at("provider_message_id").as_string());
  };

  auto delivered = push(herald, msgid(ids[0]), "success");
  BOOST_TEST(delivered.status == 200);
  BOOST_TEST(delivered.body == "success");
  BOOST_TEST(status_of(herald, ids[0]) == "DELIVERED");

  BOOST_TEST(push(herald, msgid(ids[1]), "failed:user block").status == 200);
  BOOST_TEST(status_of(herald, ids[1]) == "UNDELIVERED");

  const auto forged = push(herald, msgid(ids[2]), "success", "not-the-token");
  BOOST_TEST(forged.status == 401);
  BOOST_TEST(forged.body.find("invalid_signature") != std::string::npos);
  BOOST_TEST(status_of(herald, ids[2]) == "SENT");

  // A push for a message herald never sent is acknowledged (WeChat would push it again and
  // again otherwise) and counted, not recorded.
  BOOST_TEST(push(herald, "999", "success").body == "success");
}

// Two channels of one appid share its token even when one writes base_url with a trailing
// slash: a second account would fetch its own token, ending the other's each time (WeChat
// issues one token per appid), and every send would refetch and resend.
BOOST_AUTO_TEST_CASE(channels_of_one_appid_share_one_token_whatever_the_trailing_slash) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  auto channel = [&](const std::string& name, const std::string& base_url) {
    return R"({"name":")" + name +
           R"(","type":"wechat_template","appid":"wx-fake-app","app_secret":"fake-app-secret",)"
           R"("template_id":"tpl-order-shipped","body_field":"keyword1","base_url":")" +
           base_url + R"(","timeout_ms":2000})";
  };
  running_herald herald{"", R"({"channels":[)" + channel("wechat", server->url("")) + "," +
                                channel("wechat2", server->url("") + "/") + "]}"};
  std::vector<std::string> ids;
  for (int n = 0; n < 6; ++n) {
    json::object body{{"biz_type", "WECHAT"},
                      {"biz_id", "both-" + std::to_string(n)},
                      {"user_id", "u-" + std::to_string(n)},
                      {"channels", json::array{n % 2 == 0 ? "wechat" : "wechat2"}},
                      {"to", {{"wechat", "o-user-1"}, {"wechat2", "o-user-2"}}},
                      {"content", {{"body", "On its way"}}}};
    auto response = herald.post(json::serialize(body));
    BOOST_REQUIRE_EQUAL(response.status, 202);
    ids.push_back(std::string(json::parse(response.body).at("message_id").as_string()));
    BOOST_REQUIRE(eventually([&] { return status_of(herald, ids.back()) == "SENT"; }));
  }
  BOOST_TEST(fake.token_requests() == 1u);
}

// The handshake's signature covers only its timestamp and nonce: its query, replayed on a POST
// with a forged "failed:user block", must not end a task UNDELIVERED (and fail it over).
BOOST_AUTO_TEST_CASE(a_replayed_handshake_query_carries_no_forged_push) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  running_herald herald{"", wechat_config(*server)};
  const auto id = submit(herald, 1);
  BOOST_REQUIRE(eventually([&] { return status_of(herald, id) == "SENT"; }));
  BOOST_REQUIRE(eventually([&] { return first_task(herald, id).contains("provider_message_id"); }));
  const auto msgid = std::string(first_task(herald, id).at("provider_message_id").as_string());

  const auto lifted = check_url(herald);
  BOOST_REQUIRE_EQUAL(lifted.answer.status, 200);
  const auto refused = forged_push(herald, lifted.query, msgid);
  BOOST_TEST(refused.status == 401);
  BOOST_TEST(refused.body.find("replayed_signature") != std::string::npos, refused.body);
  BOOST_TEST(status_of(herald, id) == "SENT");
  // WeChat's own handshake again is answered as before; a real push still lands.
  BOOST_TEST(herald.get("/v1/receipts/wechat?" + lifted.query + "&echostr=echo-1234").status ==
             200);
  BOOST_TEST(push(herald, msgid, "success").status == 200);
  BOOST_TEST(status_of(herald, id) == "DELIVERED");
}

BOOST_AUTO_TEST_CASE(a_handshake_query_carries_no_forged_push_after_a_restart) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  temp_dir dir{"herald-e2e-wechat"};
  const auto database = "sqlite:" + dir.file("herald.db");
  std::string lifted;
  {
    running_herald before{database, wechat_config(*server)};
    const auto handshake = check_url(before);
    BOOST_REQUIRE_EQUAL(handshake.answer.status, 200);
    lifted = handshake.query;
  } // killed
  running_herald after{database, wechat_config(*server)};
  const auto refused = forged_push(after, lifted, "3662956322040938501");
  BOOST_TEST(refused.status == 401);
  BOOST_TEST(refused.body.find("replayed_signature") != std::string::npos, refused.body);
}

BOOST_AUTO_TEST_CASE(a_handshake_query_carries_no_forged_push_on_another_node_of_one_sqlite_file) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  temp_dir dir{"herald-e2e-wechat"};
  const auto database = "sqlite:" + dir.file("herald.db");
  running_herald first{database, wechat_config(*server)};
  running_herald second{database, wechat_config(*server)};
  a_handshake_replayed_on(first, second);
}

BOOST_AUTO_TEST_CASE(the_callback_url_handshake_echoes_echostr) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  running_herald herald{"", wechat_config(*server)};
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto signed_query = wechat_fake::finish_push(callback_token, "", "", "", now).query;
  auto answer = herald.get("/v1/receipts/wechat?" + signed_query + "&echostr=1234567890");
  BOOST_TEST(answer.status == 200);
  BOOST_TEST(answer.body == "1234567890");
  // The echo is the caller's text: a browser must not take it for HTML.
  BOOST_TEST(answer.header("content-type") == "text/plain");
  BOOST_TEST(answer.header("x-content-type-options") == "nosniff");
  auto forged = wechat_fake::finish_push("wrong", "", "", "", now).query;
  BOOST_TEST(herald.get("/v1/receipts/wechat?" + forged + "&echostr=1").status == 401);
}

BOOST_AUTO_TEST_SUITE_END()

// Two nodes on one PostgreSQL database (scripts/with-postgres.sh provides a server).
BOOST_AUTO_TEST_SUITE(wechat_postgres_tests,
                      *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

BOOST_AUTO_TEST_CASE(a_handshake_query_carries_no_forged_push_on_another_node) {
  wechat_fake fake{wechat_fake::options{}};
  auto server = serve(fake);
  const auto database = own_test_database();
  running_herald first{database, wechat_config(*server)};
  running_herald second{database, wechat_config(*server)};
  a_handshake_replayed_on(first, second);
}

BOOST_AUTO_TEST_SUITE_END()
