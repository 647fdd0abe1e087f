// Cost-aware escalation against the built binary (docs/policy.md): a route sends the in-app
// inbox first and the SMS only if nothing of the message was READ within its delay. The SMS is
// a task of its own from the start (its own key, its own send time in the database), so an
// unread message gets exactly one SMS after the delay, a read one none (the SMS SUPPRESSED
// read_before_escalation), and a second firing — another node's sweep, a restart, the event
// sent again — finds the task already taken.

#include "support/eventually.hpp"
#include "support/herald_server.hpp"
#include "support/postgres.hpp"

#include <csignal>
#include <random>
#include <string>
#include <unistd.h>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

// REMIND escalates after 1.5 s; REMIND_LATER after 15 s, time enough on a loaded machine to
// read the inbox first, or to kill a node before the step is due.
const std::string escalation_config = R"({
  "channels": [{"name": "inapp", "type": "inapp", "lease_ms": 2000},
               {"name": "sms", "type": "simulated", "rate_per_sec": 1000, "burst": 100}],
  "sweep_interval_ms": 100,
  "policy": {"quiet_hours": {"categories": []}},
  "routes": {
    "REMIND": {"channels": ["inapp"], "escalation": [{"channel": "sms", "after_ms": 1500}]},
    "REMIND_LATER": {"channels": ["inapp"], "escalation": [{"channel": "sms", "after_ms": 15000}]}
  }
})";

std::string unique(const std::string& prefix) {
  std::random_device device;
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(device() % 1000000);
}

std::string reminder(const std::string& biz_type, const std::string& biz_id) {
  return json::serialize(json::object{{"biz_type", biz_type},
                                      {"biz_id", biz_id},
                                      {"user_id", "u-" + biz_id},
                                      {"to", {{"sms", "+8613800000000"}}},
                                      {"content", {{"title", "Reminder"}, {"body", "Pay today"}}}});
}

std::string text_of(const json::value& v, const char* key) {
  const auto* found = v.as_object().if_contains(key);
  return found != nullptr && found->is_string() ? std::string(found->as_string()) : "";
}

// The message's task on `channel` as GET /v1/messages/{id} shows it; null when not found.
json::value task_on(running_herald& herald, const std::string& message_id,
                    const std::string& channel) {
  auto response = herald.get("/v1/messages/" + message_id);
  if (response.status != 200)
    return nullptr;
  const auto message = json::parse(response.body);
  for (const auto& task : message.at("tasks").as_array())
    if (text_of(task, "channel") == channel)
      return task;
  return nullptr;
}

std::string status_on(running_herald& herald, const std::string& message_id,
                      const std::string& channel) {
  auto task = task_on(herald, message_id, channel);
  return task.is_null() ? "" : text_of(task, "status");
}

std::string accept(running_herald& herald, const std::string& body) {
  auto answer = herald.post(body);
  BOOST_REQUIRE_EQUAL(answer.status, 202);
  const auto parsed = json::parse(answer.body);
  const auto& tasks = parsed.at("tasks").as_array();
  BOOST_REQUIRE_EQUAL(tasks.size(), 2U); // the inbox task and the escalation step
  return text_of(parsed, "message_id");
}

double sms_calls(running_herald& herald) {
  return metric_sum(herald.metrics(), "herald_provider_calls_total", {"channel=\"sms\""});
}

} // namespace

BOOST_AUTO_TEST_SUITE(escalation_tests)

BOOST_AUTO_TEST_CASE(unread_the_sms_goes_once_after_the_delay) {
  running_herald herald{"", escalation_config};
  const auto biz_id = unique("unread");
  const auto message = accept(herald, reminder("REMIND", biz_id));
  // The event again while the step waits: the same two tasks.
  auto again = herald.post(reminder("REMIND", biz_id));
  BOOST_REQUIRE_EQUAL(again.status, 200);
  BOOST_TEST(eventually([&] { return status_on(herald, message, "inapp") == "SENT"; }));

  BOOST_TEST(eventually([&] { return status_on(herald, message, "sms") == "SENT"; }));
  const auto sms = task_on(herald, message, "sms");
  const auto& attempts = sms.at("attempt_log").as_array();
  BOOST_REQUIRE_EQUAL(attempts.size(), 1U);
  // Not before its time: the step's send time is the acceptance plus 1.5 s.
  BOOST_TEST(text_of(sms, "send_at") != "");
  BOOST_TEST(text_of(attempts.at(0), "started_at") >= text_of(sms, "send_at"));
  BOOST_TEST(text_of(sms, "send_at") > text_of(task_on(herald, message, "inapp"), "created_at"));
  BOOST_REQUIRE_EQUAL(herald.post(reminder("REMIND", biz_id)).status, 200);
  BOOST_TEST(sms_calls(herald) == 1.0);
}

BOOST_AUTO_TEST_CASE(read_before_the_delay_the_sms_is_never_sent) {
  running_herald herald{"", escalation_config};
  const auto message = accept(herald, reminder("REMIND_LATER", unique("read")));
  BOOST_TEST(eventually([&] { return status_on(herald, message, "inapp") == "SENT"; }));
  BOOST_REQUIRE(status_on(herald, message, "sms") == "PENDING"); // waits for its 15 s

  const auto inbox_task = text_of(task_on(herald, message, "inapp"), "task_id");
  auto read = herald.post_to("/v1/inbox/" + inbox_task + "/read");
  BOOST_REQUIRE_EQUAL(read.status, 200);
  BOOST_TEST(text_of(json::parse(read.body), "state") == "READ");

  BOOST_TEST(eventually([&] { return status_on(herald, message, "sms") == "SUPPRESSED"; }, 60s));
  const auto sms = task_on(herald, message, "sms");
  BOOST_TEST(text_of(sms, "policy_reason") == "read_before_escalation");
  BOOST_TEST(sms.at("attempt_log").as_array().empty());
  BOOST_TEST(sms_calls(herald) == 0.0);
  const auto stats = json::parse(herald.get("/v1/stats").body);
  BOOST_TEST(
      stats.at("total").at("policy").at("suppressed").at("read_before_escalation").as_int64() == 1);
  BOOST_TEST(metric_sum(herald.metrics(), "herald_tasks_suppressed_total",
                        {"channel=\"sms\"", "reason=\"read_before_escalation\""}) == 1.0);
}

// Killed before the step is due, restarted: the step is in the database, not in the dead
// process's timer, and goes once; a second node on the same database sweeps it as well.
BOOST_AUTO_TEST_CASE(an_escalation_firing_twice_sends_once) {
  const auto url = own_test_database("herald_esc_");
  std::string message;
  {
    running_herald doomed(url, escalation_config);
    message = accept(doomed, reminder("REMIND_LATER", unique("twice")));
    BOOST_REQUIRE(status_on(doomed, message, "sms") == "PENDING");
    doomed.process().signal(SIGKILL);
    BOOST_REQUIRE(doomed.process().wait_exit(10s).has_value());
  }
  running_herald first(url, escalation_config);
  running_herald second(url, escalation_config);
  BOOST_TEST(eventually([&] { return status_on(first, message, "sms") == "SENT"; }, 60s));
  const auto sms = task_on(first, message, "sms");
  BOOST_TEST(sms.at("attempt_log").as_array().size() == 1U);
  BOOST_TEST(sms_calls(first) + sms_calls(second) == 1.0); // both swept it when it came due
  // A late read changes nothing of the send already made.
  const auto inbox_task = text_of(task_on(first, message, "inapp"), "task_id");
  BOOST_TEST(eventually([&] { return status_on(first, message, "inapp") == "SENT"; }));
  BOOST_REQUIRE_EQUAL(first.post_to("/v1/inbox/" + inbox_task + "/read").status, 200);
  BOOST_TEST(status_on(first, message, "sms") == "SENT");
}

BOOST_AUTO_TEST_SUITE_END()
