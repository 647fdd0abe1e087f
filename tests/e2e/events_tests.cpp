// Status events from the built binary (docs/events.md) to a receiver that is down (503) for a
// while, then up: every (task, state) event arrives, at least once and exactly once after
// deduplication by webhook-id, and sending is measured while the receiver is down and while
// it is up (figures printed, not asserted: wall-clock is noisy).
//
// HERALD_EVENTS_DOWN_MS (default 2000) sets how long the receiver is down and
// HERALD_EVENTS_MESSAGES (default 200) how many messages each phase sends; the issue's drill
// is HERALD_EVENTS_DOWN_MS=30000, run by hand.

#include "support/herald_server.hpp"
#include "support/test_http_server.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

long env_number(const char* name, long fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::atol(text) : fallback;
}

std::string message(const std::string& biz_id) {
  return json::serialize(json::object{{"biz_type", "EVENTS"},
                                      {"biz_id", biz_id},
                                      {"user_id", "u-1"},
                                      {"channels", json::array{"sms"}},
                                      {"to", json::object{{"sms", "+8613800000000"}}},
                                      {"content", json::object{{"title", "t"}, {"body", "b"}}}});
}

double sent_calls(const std::string& metrics) {
  return metric_sum(metrics, "herald_provider_calls_total", {"outcome=\"success\""});
}

// Posts `count` messages and waits until every one is SENT; the seconds that took, and the
// task ids in the answers.
double send_and_time(running_herald& herald, const std::string& prefix, int count,
                     double already_sent, std::set<std::string>& task_ids) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    auto answer = herald.post(message(prefix + std::to_string(i)));
    BOOST_REQUIRE_EQUAL(answer.status, 202);
    task_ids.insert(std::string(
        json::parse(answer.body).at("tasks").as_array().at(0).at("task_id").as_string()));
  }
  auto text = herald.wait_for_metrics(
      [&](const std::string& m) { return sent_calls(m) >= already_sent + count; }, 120s);
  BOOST_REQUIRE_EQUAL(sent_calls(text), already_sent + count);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(events_tests)

BOOST_AUTO_TEST_CASE(a_receiver_down_then_up_gets_every_event_and_sending_does_not_wait) {
  const auto down_for = std::chrono::milliseconds{env_number("HERALD_EVENTS_DOWN_MS", 2000)};
  const int count = static_cast<int>(env_number("HERALD_EVENTS_MESSAGES", 200));

  std::atomic<bool> down{true};
  std::mutex mutex;
  std::map<std::string, int> accepted; // webhook-id -> 2xx answers given
  std::map<std::string, std::string> type_of;
  test_server receiver{[&](const recorded_request& r) {
    if (down)
      return reply{503, {}, "down"};
    auto body = json::parse(r.body).as_object();
    std::lock_guard<std::mutex> guard{mutex};
    ++accepted[r.header("webhook-id")];
    type_of[r.header("webhook-id")] = std::string(body.at("type").as_string());
    return reply{204, {}, ""};
  }};
  running_herald herald({}, R"({
    "channels": [{"name": "sms", "type": "simulated", "rate_per_sec": 5000, "burst": 500}],
    "events": {"url": ")" + receiver.url("/events") +
                                R"(",
               "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
               "retry": {"schedule_ms": [100, 200, 400, 800, 1000], "jitter": 0,
                         "max_attempts": 1000}}})");

  // Phase 1: the receiver is down. Sending must not wait for it.
  const auto went_down = std::chrono::steady_clock::now();
  std::set<std::string> task_ids;
  const double seconds_down = send_and_time(herald, "down-", count, 0, task_ids);
  auto text = herald.wait_for_metrics([](const std::string& m) {
    return metric_sum(m, "herald_events_delivered_total", {"outcome=\"retry\""}) > 0;
  });
  BOOST_TEST(metric_sum(text, "herald_events_pending") > 0);
  BOOST_TEST(metric_sum(text, "herald_events_delivered_total", {"outcome=\"delivered\""}) == 0);
  const auto left = down_for - (std::chrono::steady_clock::now() - went_down);
  if (left > 0ms)
    std::this_thread::sleep_for(left); // the outage itself, not a wait for herald
  down = false;

  // Phase 2: the receiver is up; the same number of messages again.
  const double seconds_up = send_and_time(herald, "up-", count, count, task_ids);
  text = herald.wait_for_metrics(
      [&](const std::string& m) {
        return metric_sum(m, "herald_events_delivered_total", {"outcome=\"delivered\""}) >=
                   2.0 * count &&
               metric_sum(m, "herald_events_pending") == 0;
      },
      120s);
  BOOST_TEST(metric_sum(text, "herald_events_delivered_total", {"outcome=\"dead\""}) == 0);

  std::lock_guard<std::mutex> guard{mutex};
  int duplicates = 0;
  for (const auto& [id, times] : accepted)
    duplicates += times - 1;
  std::set<std::string> expected;
  for (const auto& task : task_ids)
    expected.insert("evt_" + task + "_sent");
  std::set<std::string> got;
  for (const auto& [id, times] : accepted)
    got.insert(id);
  BOOST_TEST(got == expected); // none missing, none extra: exactly once after dedup by id
  for (const auto& [id, type] : type_of)
    BOOST_TEST(type == "task.sent");
  BOOST_TEST_MESSAGE("events e2e: " << count << " messages per phase, receiver down "
                                    << down_for.count() << " ms; time to SENT with receiver down "
                                    << seconds_down << " s, up " << seconds_up
                                    << " s; events accepted " << got.size() << ", duplicates "
                                    << duplicates);
  std::cout << "events e2e: messages/phase=" << count << " down_ms=" << down_for.count()
            << " sent_down_s=" << seconds_down << " sent_up_s=" << seconds_up
            << " events=" << got.size() << " duplicates=" << duplicates << std::endl;
}

BOOST_AUTO_TEST_SUITE_END()
