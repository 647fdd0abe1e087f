// The built herald binary over HTTP when providers fail: dead letters are listed and a replay
// sends exactly once; a channel pointed at a closed port retries, opens its circuit, and new
// tasks fail over to the fallback channel without being sent on both.

#include "support/eventually.hpp"
#include "support/herald_server.hpp"

#include <future>
#include <map>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

std::string message(const std::string& biz_id, const json::array& channels) {
  return json::serialize(
      json::object{{"biz_type", "RELIABILITY"},
                   {"biz_id", biz_id},
                   {"user_id", "u-1"},
                   {"channels", channels},
                   {"to", json::object{{"sms", "+8613800000000"}, {"app", "device-token-1"}}},
                   {"content", json::object{{"title", "t"}, {"body", "b"}}}});
}

double calls(const std::string& metrics, const std::string& channel, const std::string& outcome) {
  return metric_sum(metrics, "herald_provider_calls_total",
                    {"channel=\"" + channel + "\"", "outcome=\"" + outcome + "\""});
}

/// Each task's status by channel, as GET /v1/messages/{id} shows the message.
std::map<std::string, std::string> state_by_channel(running_herald& herald,
                                                    const std::string& message_id) {
  const auto view = json::parse(herald.get("/v1/messages/" + message_id).body);
  std::map<std::string, std::string> states;
  for (const auto& task : view.at("tasks").as_array())
    states[std::string(task.at("channel").as_string())] = task.at("status").as_string().c_str();
  return states;
}

json::object task_of(running_herald& herald, const std::string& message_id) {
  auto view = json::parse(herald.get("/v1/messages/" + message_id).body).as_object();
  return view.at("tasks").as_array().at(0).as_object();
}

} // namespace

BOOST_AUTO_TEST_SUITE(dead_letter_tests)

BOOST_AUTO_TEST_CASE(a_failed_task_is_listed_and_a_double_replay_sends_once) {
  // Each call takes a second: the replayed task is still on its way (not FAILED again) when
  // the second replay arrives, so that one must be refused.
  running_herald herald({}, R"({
    "channels": [
      {"name": "sms", "type": "simulated", "permanent_failure_rate": 1.0, "latency_ms": 1000},
      {"name": "app", "type": "simulated"}
    ]})");
  auto accepted = herald.post(message("dl-1", {"sms"}));
  BOOST_REQUIRE_EQUAL(accepted.status, 202);
  auto message_id = std::string(json::parse(accepted.body).at("message_id").as_string());
  auto text = herald.wait_for_metrics([](auto& m) { return calls(m, "sms", "permanent") >= 1; });
  BOOST_REQUIRE_EQUAL(calls(text, "sms", "permanent"), 1.0);

  // The call is counted before its FAILED is committed: wait (bounded) for the listing.
  json::array letters;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       letters.empty() && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(20ms)) { // polling a condition, bounded
    auto listed = herald.get("/v1/dead-letters?channel=sms");
    BOOST_REQUIRE_EQUAL(listed.status, 200);
    letters = json::parse(listed.body).at("dead_letters").as_array();
  }
  BOOST_REQUIRE_EQUAL(letters.size(), 1u);
  auto task_id = std::string(letters[0].at("task_id").as_string());
  BOOST_TEST(letters[0].at("status").as_string() == "FAILED");
  BOOST_TEST(letters[0].at("message_id").as_string() == message_id);
  BOOST_TEST(json::parse(herald.get("/v1/dead-letters?channel=app").body)
                 .at("dead_letters")
                 .as_array()
                 .empty());

  // Two operators press "replay" at once: one replays, the other is told it is not replayable.
  auto target = "/v1/dead-letters/" + task_id + "/replay";
  auto first = std::async(std::launch::async, [&] { return herald.post_to(target); });
  auto second = std::async(std::launch::async, [&] { return herald.post_to(target); });
  auto a = first.get().status;
  auto b = second.get().status;
  BOOST_TEST(((a == 202 && b == 409) || (a == 409 && b == 202)), a << " and " << b);

  text = herald.wait_for_metrics([](auto& m) { return calls(m, "sms", "permanent") >= 2; });
  BOOST_TEST(calls(text, "sms", "permanent") == 2.0);
  // As above, the call is counted before its outcome (and its attempt) is committed.
  json::object task;
  BOOST_TEST(eventually([&] {
    task = task_of(herald, message_id);
    return task.at("status").as_string() == "FAILED";
  }));
  BOOST_TEST(task.at("attempts").as_int64() == 2);       // the attempt counter continued
  BOOST_TEST(task.at("task_id").as_string() == task_id); // same task, same key
  BOOST_TEST(herald.post_to("/v1/dead-letters/tsk_unknown/replay").status == 404);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(failover_tests)

BOOST_AUTO_TEST_CASE(a_closed_port_opens_the_circuit_and_new_tasks_fail_over_once) {
  auto closed = free_port(); // nothing listens there
  running_herald herald({}, R"({
    "channels": [
      {"name": "sms", "type": "webhook", "url": "http://127.0.0.1:)" +
                                std::to_string(closed) + R"(/sms",
       "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "timeout_ms": 500,
       "fallback": "app", "retry": {"schedule_ms": [100], "max_attempts": 3, "jitter": 0},
       "circuit": {"failure_threshold": 6, "cool_down_ms": 600000}},
      {"name": "app", "type": "simulated"}
    ]})");
  // Tried first: these retry on schedule until they are DEAD (their six failures open the
  // circuit). A refused connection is a known failure (the provider never had the message), so
  // each DEAD fails over to app in the transaction that records it: the user gets it once.
  std::vector<std::string> tried;
  for (int i = 0; i < 2; ++i) {
    auto answer = herald.post(message("tried-" + std::to_string(i), {"sms"}));
    BOOST_REQUIRE_EQUAL(answer.status, 202);
    tried.emplace_back(json::parse(answer.body).at("message_id").as_string());
  }
  auto text = herald.wait_for_metrics([](auto& m) {
    return metric_sum(m, "herald_circuit_state", {"channel=\"sms\""}) == 1.0 &&
           metric_sum(m, "herald_dead_letters_total", {"channel=\"sms\""}) >= 2.0 &&
           calls(m, "app", "success") >= 2;
  });
  BOOST_REQUIRE_EQUAL(metric_sum(text, "herald_circuit_state", {"channel=\"sms\""}), 1.0);
  BOOST_TEST(calls(text, "sms", "retryable") == 6.0); // 2 tasks x 3 attempts, on schedule
  BOOST_TEST(calls(text, "app", "success") == 2.0);   // their fallbacks, once each
  for (auto& id : tried)
    BOOST_TEST((state_by_channel(herald, id) ==
                (std::map<std::string, std::string>{{"app", "SENT"}, {"sms", "DEAD"}})));

  // New tasks while the circuit is open go to the fallback channel, each once.
  std::vector<std::string> fresh;
  for (int i = 0; i < 5; ++i) {
    auto answer = herald.post(message("fresh-" + std::to_string(i), {"sms"}));
    BOOST_REQUIRE_EQUAL(answer.status, 202);
    fresh.emplace_back(json::parse(answer.body).at("message_id").as_string());
  }
  text = herald.wait_for_metrics([](auto& m) { return calls(m, "app", "success") >= 7; });
  BOOST_TEST(calls(text, "app", "success") == 7.0);
  BOOST_TEST(calls(text, "sms", "retryable") == 6.0); // none of them touched sms
  BOOST_TEST(metric_sum(text, "herald_failovers_total", {"from=\"sms\"", "to=\"app\""}) == 7.0);
  for (auto& id : fresh) {
    auto view = json::parse(herald.get("/v1/messages/" + id).body).as_object();
    auto& tasks = view.at("tasks").as_array();
    BOOST_REQUIRE_EQUAL(tasks.size(), 2u);
    for (auto& item : tasks) {
      auto& task = item.as_object();
      auto expected = task.at("channel").as_string() == "sms" ? "SUPPRESSED" : "SENT";
      BOOST_TEST(task.at("status").as_string() == expected);
    }
  }

  // A direct request for app on a failed-over message is the same task: nothing new is sent.
  auto direct = herald.post(message("fresh-0", {"app"}));
  BOOST_TEST(direct.status == 200);
  text = herald.metrics();
  BOOST_TEST(calls(text, "app", "success") == 7.0);
}

BOOST_AUTO_TEST_SUITE_END()
