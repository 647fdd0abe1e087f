// The policy layer over HTTP against the built binary (docs/policy.md): a frequency cap is
// exact when two herald processes admit one user's events concurrently on one PostgreSQL;
// suppressed tasks say why and stay suppressed when the event is sent again; marketing inside
// the user's quiet hours waits in the database for the morning, through a restart, while a
// verification code and a transactional message go at once.

#include "support/eventually.hpp"
#include "support/herald_process.hpp"
#include "support/herald_server.hpp"
#include "support/http_client.hpp"
#include "support/postgres.hpp"

#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

// Marketing SMS: at most 3 per user per day; quiet hours hold nothing, so the test does not
// depend on the hour it runs at.
const std::string capped_config = R"({
  "channels": [{"name": "sms", "type": "simulated", "rate_per_sec": 1000, "burst": 100}],
  "policy": {
    "quiet_hours": {"categories": []},
    "frequency_caps": [{"category": "marketing", "channel": "sms", "per": "day", "limit": 3}]
  }
})";

std::string unique_user() {
  std::random_device device;
  return "u-cap-" + std::to_string(::getpid()) + "-" + std::to_string(device() % 1000000);
}

std::string marketing_sms(const std::string& user, const std::string& biz_id) {
  return json::serialize(json::object{{"biz_type", "PROMO"},
                                      {"biz_id", biz_id},
                                      {"user_id", user},
                                      {"channels", json::array{"sms"}},
                                      {"category", "marketing"},
                                      {"to", {{"sms", "+8613800000000"}}},
                                      {"content", {{"title", "Sale"}, {"body", "20% off"}}}});
}

std::string text_of(const json::value& v, const char* key) {
  const auto* found = v.as_object().if_contains(key);
  return found != nullptr && found->is_string() ? std::string(found->as_string()) : "";
}

std::string task_status(running_herald& herald, const std::string& message_id) {
  auto response = herald.get("/v1/messages/" + message_id);
  if (response.status != 200)
    return "";
  return text_of(json::parse(response.body).at("tasks").as_array().at(0), "status");
}

// Users without a stored zone live in Shanghai (UTC+8, no DST); quiet hours 22:00-08:00.
// The sweep runs often, so a task that came due is read within a fraction of a second.
const std::string shanghai_config = R"({
  "channels": [{"name": "sms", "type": "simulated", "rate_per_sec": 1000, "burst": 100}],
  "sweep_interval_ms": 100,
  "policy": {"default_time_zone": "Asia/Shanghai"}
})";

std::string event_of(const std::string& biz_id, const std::string& category) {
  return json::serialize(json::object{{"biz_type", "NOTICE"},
                                      {"biz_id", biz_id},
                                      {"user_id", "u-night"},
                                      {"channels", json::array{"sms"}},
                                      {"category", category},
                                      {"to", {{"sms", "+8613800000000"}}},
                                      {"content", {{"title", "t"}, {"body", "b"}}}});
}

json::object first_task_of(running_herald& herald, const std::string& message_id) {
  auto response = herald.get("/v1/messages/" + message_id);
  BOOST_REQUIRE_EQUAL(response.status, 200);
  return json::parse(response.body).at("tasks").as_array().at(0).as_object();
}

} // namespace

BOOST_AUTO_TEST_SUITE(policy_tests)

// 23:00 in Shanghai: marketing is deferred to 08:00 (its send_at and reason on the task), a
// verification code and a transactional message are sent now. herald restarted at 08:00:01
// (its clock driven by --test-clock) sends the marketing message from the database.
BOOST_AUTO_TEST_CASE(marketing_at_23_waits_for_08_through_a_restart) {
  temp_dir dir{"herald-policy"};
  const auto database = "sqlite:" + dir.file("herald.db");
  std::string marketing;
  {
    running_herald night(database, shanghai_config, {"--test-clock", "2026-12-03T15:00:00Z"});
    auto answer = night.post(event_of("night-promo", "marketing"));
    BOOST_REQUIRE_EQUAL(answer.status, 202);
    const auto body = json::parse(answer.body);
    marketing = text_of(body, "message_id");
    const auto& task = body.at("tasks").as_array().at(0);
    BOOST_TEST(text_of(task, "status") == "PENDING");
    BOOST_TEST(text_of(task, "policy_reason") == "quiet_hours");

    const std::vector<std::string> now_categories{"verification", "transactional"};
    for (const auto& category : now_categories) {
      auto sent = night.post(event_of("night-" + category, category));
      BOOST_REQUIRE_EQUAL(sent.status, 202);
      const auto id = text_of(json::parse(sent.body), "message_id");
      BOOST_TEST(eventually([&] { return text_of(first_task_of(night, id), "status") == "SENT"; }),
                 category);
    }
    // Sent after the marketing message was accepted, and many sweeps later: it still waits.
    const auto waiting = first_task_of(night, marketing);
    BOOST_TEST(text_of(waiting, "status") == "PENDING");
    BOOST_TEST(text_of(waiting, "policy_reason") == "quiet_hours");
    BOOST_TEST(text_of(waiting, "send_at") == "2026-12-04T00:00:00.000000Z"); // 08:00 local
    BOOST_TEST(metric_sum(night.metrics(), "herald_tasks_deferred_total",
                          {"reason=\"quiet_hours\""}) == 1.0);
    const auto stats = json::parse(night.get("/v1/stats").body);
    BOOST_TEST(stats.at("total").at("policy").at("deferred").at("quiet_hours").as_int64() == 1);
  }
  running_herald morning(database, shanghai_config, {"--test-clock", "2026-12-04T00:00:01Z"});
  BOOST_TEST(
      eventually([&] { return text_of(first_task_of(morning, marketing), "status") == "SENT"; }));
  const auto sent = first_task_of(morning, marketing);
  const auto& attempts = sent.at("attempt_log").as_array();
  BOOST_REQUIRE_EQUAL(attempts.size(), 1U);
  BOOST_TEST(text_of(attempts.at(0), "started_at") >= "2026-12-04T00:00:00");
}

// A stored profile decides: its contact fills a left-out `to`; under DND a verification code
// is sent while marketing and transactional messages are SUPPRESSED dnd; its own zone (New
// York, 22:30 there while 11:30 in Shanghai) puts marketing in quiet hours; lifting DND lets
// the next transactional message through.
BOOST_AUTO_TEST_CASE(a_users_profile_decides_contacts_dnd_and_zone) {
  running_herald herald("", shanghai_config, {"--test-clock", "2026-12-04T03:30:00Z"});
  const auto call = [&](const std::string& method, const std::string& target,
                        const std::string& body) {
    return request(host, herald.port(), method, target, body, json_headers());
  };
  BOOST_REQUIRE_EQUAL(call("PUT", "/v1/users/u-night",
                           R"({"contacts": {"sms": "+8613811112222"},
                               "time_zone": "America/New_York"})")
                          .status,
                      200);
  BOOST_REQUIRE_EQUAL(call("PUT", "/v1/users/u-night/dnd", "{}").status, 200);
  const auto submit = [&](const std::string& biz_id, const std::string& category) {
    auto body = json::parse(event_of(biz_id, category)).as_object();
    body.erase("to"); // the stored contact is used
    auto answer = herald.post(json::serialize(body));
    BOOST_REQUIRE_EQUAL(answer.status, 202);
    return json::parse(answer.body);
  };
  const auto code = submit("dnd-code", "verification");
  const auto code_id = text_of(code, "message_id");
  BOOST_TEST(
      eventually([&] { return text_of(first_task_of(herald, code_id), "status") == "SENT"; }));
  BOOST_TEST(text_of(first_task_of(herald, code_id), "recipient") != "");
  for (const auto& category : {"marketing", "transactional"}) {
    const auto held = submit(std::string("dnd-") + category, category);
    const auto& task = held.at("tasks").as_array().at(0);
    BOOST_TEST(text_of(task, "status") == "SUPPRESSED", category);
    BOOST_TEST(text_of(task, "policy_reason") == "dnd", category);
  }
  BOOST_REQUIRE_EQUAL(call("DELETE", "/v1/users/u-night/dnd", "").status, 200);
  const auto after = submit("after-dnd", "transactional");
  const auto after_id = text_of(after, "message_id");
  BOOST_TEST(
      eventually([&] { return text_of(first_task_of(herald, after_id), "status") == "SENT"; }));
  const auto night_promo = submit("ny-promo", "marketing");
  const auto& promo = night_promo.at("tasks").as_array().at(0);
  BOOST_TEST(text_of(promo, "status") == "PENDING");
  BOOST_TEST(text_of(promo, "policy_reason") == "quiet_hours");
  BOOST_TEST(text_of(first_task_of(herald, text_of(night_promo, "message_id")), "send_at") ==
             "2026-12-04T13:00:00.000000Z"); // 08:00 EST
}

// No address in the request and none stored: the task is recorded SUPPRESSED no_contact.
BOOST_AUTO_TEST_CASE(a_task_without_any_address_is_suppressed_no_contact) {
  running_herald herald("", shanghai_config);
  auto body = json::parse(event_of("no-contact", "transactional")).as_object();
  body.erase("to");
  body["user_id"] = "u-unknown";
  auto answer = herald.post(json::serialize(body));
  BOOST_REQUIRE_EQUAL(answer.status, 202);
  const auto parsed = json::parse(answer.body);
  const auto& task = parsed.at("tasks").as_array().at(0);
  BOOST_TEST(text_of(task, "status") == "SUPPRESSED");
  BOOST_TEST(text_of(task, "policy_reason") == "no_contact");
  BOOST_TEST(metric_sum(herald.metrics(), "herald_tasks_suppressed_total",
                        {"channel=\"sms\"", "reason=\"no_contact\""}) == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(policy_postgres_tests,
                      *boost::unit_test::precondition(herald::test::postgres_tests_enabled))

// Ten distinct marketing SMS events for one user, sent at once, half to each of two nodes
// sharing the database: exactly three are admitted and sent, seven are SUPPRESSED with
// policy_reason frequency_cap; sending the ten again changes nothing.
BOOST_AUTO_TEST_CASE(a_cap_of_three_admits_three_across_two_nodes) {
  const auto url = own_test_database();
  running_herald first(url, capped_config);
  running_herald second(url, capped_config);
  const auto user = unique_user();
  constexpr int events = 10;

  std::vector<http_response> answers(events);
  std::vector<std::thread> senders;
  for (int i = 0; i < events; ++i)
    senders.emplace_back([&, i] {
      auto& node = i % 2 == 0 ? first : second;
      answers[i] = request(host, node.port(), "POST", "/v1/messages",
                           marketing_sms(user, "promo-" + std::to_string(i)), json_headers());
    });
  for (auto& sender : senders)
    sender.join();

  std::vector<std::string> admitted;
  int suppressed = 0;
  for (int i = 0; i < events; ++i) {
    BOOST_TEST_CONTEXT("event " << i << ": " << answers[i].body) {
      BOOST_REQUIRE_EQUAL(answers[i].status, 202);
      const auto body = json::parse(answers[i].body);
      const auto& task = body.at("tasks").as_array().at(0);
      if (text_of(task, "status") == "SUPPRESSED") {
        ++suppressed;
        BOOST_TEST(text_of(task, "policy_reason") == "frequency_cap");
      } else {
        admitted.push_back(text_of(body, "message_id"));
        BOOST_TEST(text_of(task, "policy_reason").empty());
      }
    }
  }
  BOOST_TEST(admitted.size() == 3U);
  BOOST_TEST(suppressed == 7);

  // The three are sent (the simulated provider accepts them); the seven stay suppressed.
  for (const auto& id : admitted)
    BOOST_TEST(eventually([&] { return task_status(first, id) == "SENT"; }), id);
  const auto suppressed_metric = [&](running_herald& node) {
    return metric_sum(node.metrics(), "herald_tasks_suppressed_total",
                      {"channel=\"sms\"", "reason=\"frequency_cap\""});
  };
  BOOST_TEST(suppressed_metric(first) + suppressed_metric(second) == 7.0);
  const auto stats = json::parse(first.get("/v1/stats").body);
  BOOST_TEST(stats.at("total").at("policy").at("suppressed").at("frequency_cap").as_int64() >= 7);

  // A resubmission finds each task as it is: still 3 admitted, 7 suppressed.
  int still_suppressed = 0;
  for (int i = 0; i < events; ++i) {
    auto again = first.post(marketing_sms(user, "promo-" + std::to_string(i)));
    BOOST_REQUIRE_EQUAL(again.status, 200);
    const auto body = json::parse(again.body);
    const auto& task = body.at("tasks").as_array().at(0);
    BOOST_TEST(task.at("duplicate").as_bool());
    still_suppressed += text_of(task, "status") == "SUPPRESSED" ? 1 : 0;
  }
  BOOST_TEST(still_suppressed == 7);

  // The message view says why.
  const auto message_id = [&](int i) {
    auto answer = first.post(marketing_sms(user, "promo-" + std::to_string(i)));
    return text_of(json::parse(answer.body), "message_id");
  };
  for (int i = 0; i < events; ++i) {
    auto view = first.get("/v1/messages/" + message_id(i));
    BOOST_REQUIRE_EQUAL(view.status, 200);
    const auto body = json::parse(view.body);
    const auto& task = body.at("tasks").as_array().at(0);
    if (text_of(task, "status") == "SUPPRESSED")
      BOOST_TEST(text_of(task, "policy_reason") == "frequency_cap");
  }
}

BOOST_AUTO_TEST_SUITE_END()
