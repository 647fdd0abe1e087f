// `herald serve --test-clock`: every time herald writes follows its clock, including what it
// signs — the webhook-timestamp and body timestamp of a webhook channel's call and of a status
// event (docs/operations.md), so a drill at a chosen hour sees one time everywhere.

#include "support/herald_server.hpp"
#include "support/test_http_server.hpp"

#include <cstdint>
#include <set>
#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;

namespace {

const std::string secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const std::string test_clock_start = "2031-05-04T03:02:01Z";
constexpr std::int64_t test_clock_start_unix = 1935630121; // date -u -d ... +%s

} // namespace

BOOST_AUTO_TEST_SUITE(test_clock_tests)

BOOST_AUTO_TEST_CASE(signed_posts_carry_the_test_clock) {
  test_server receiver{[](const recorded_request&) {
    return reply{200, {{"Content-Type", "application/json"}}, R"({"message_id":"p-1"})"};
  }};
  running_herald herald({},
                        R"({"channels": [{"name": "sms", "type": "webhook", "url": ")" +
                            receiver.url("/sms") + R"(", "secret": ")" + secret +
                            R"(", "timeout_ms": 2000}],
                            "events": {"url": ")" +
                            receiver.url("/events") + R"(", "secret": ")" + secret + R"("}})",
                        {"--test-clock", test_clock_start});
  auto answer = herald.post(
      json::serialize(json::object{{"biz_type", "CLOCK"},
                                   {"biz_id", "clock-1"},
                                   {"user_id", "u-1"},
                                   {"channels", json::array{"sms"}},
                                   {"to", json::object{{"sms", "+8613800000000"}}},
                                   {"content", json::object{{"title", "t"}, {"body", "b"}}}}));
  BOOST_REQUIRE_EQUAL(answer.status, 202);
  const auto message_id = std::string(json::parse(answer.body).at("message_id").as_string());
  wait_for_status(herald, message_id, "SENT");
  // The call, then at least the task.sent event.
  BOOST_REQUIRE(receiver.wait_for_requests(2));

  std::set<std::string> paths;
  for (const auto& request : receiver.requests()) {
    BOOST_TEST_CONTEXT(request.target << " " << request.body) {
      paths.insert(request.target);
      const auto stamp = std::stoll(request.header("webhook-timestamp"));
      // The test clock runs on from its start: within a minute of it, years from the wall clock.
      BOOST_TEST(stamp >= test_clock_start_unix);
      BOOST_TEST(stamp < test_clock_start_unix + 60);
      const auto body_time = std::string(json::parse(request.body).at("timestamp").as_string());
      BOOST_TEST(body_time.substr(0, 15) == test_clock_start.substr(0, 15)); // 2031-05-04T03:0
    }
  }
  BOOST_TEST(paths.count("/sms") == 1u);
  BOOST_TEST(paths.count("/events") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
