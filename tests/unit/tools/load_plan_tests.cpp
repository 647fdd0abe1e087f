#include "tools/load_plan.hpp"

#include <set>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::tools;
namespace json = boost::json;

namespace {

load_options options_for(std::uint64_t events, double duplicates, double late) {
  load_options options;
  options.targets = {{"127.0.0.1", 8080}};
  options.events = events;
  options.users = 7;
  options.duplicate_ratio = duplicates;
  options.late_duplicates = late;
  options.biz_prefix = "t-";
  options.seed = 42;
  return options;
}

} // namespace

BOOST_AUTO_TEST_SUITE(load_plan_tests)

BOOST_AUTO_TEST_CASE(event_bodies_are_complete_requests) {
  auto options = options_for(10, 0, 0);
  options.channels = {"sms", "wechat", "app", "email", "webhook"};
  auto body = json::parse(event_body(options, 9)).as_object();
  BOOST_TEST(body.at("biz_type").as_string() == "LOAD_TEST");
  BOOST_TEST(body.at("biz_id").as_string() == "t-9");
  BOOST_TEST(body.at("user_id").as_string() == "u-2");
  BOOST_TEST(body.at("channels").as_array().size() == 5u);
  const auto& to = body.at("to").as_object();
  BOOST_TEST(to.at("sms").as_string() == "+8613800000002");
  BOOST_TEST(to.at("wechat").as_string() == "oLoad2");
  BOOST_TEST(to.at("app").as_string() == "device-token-2");
  BOOST_TEST(to.at("email").as_string() == "user2@example.com");
  BOOST_TEST(to.at("webhook").as_string() == "webhook:u-2");
  BOOST_TEST(body.at("content").at("title").as_string() == "Load test");

  options.to_from_channel = true;
  auto generic = json::parse(event_body(options, 9)).as_object();
  BOOST_TEST(generic.at("to").at("sms").as_string() == "sms:u-2");
}

BOOST_AUTO_TEST_CASE(resubmissions_come_after_their_original_and_repeat_its_body) {
  auto plan = make_load_plan(options_for(200, 0.25, 0.1));
  BOOST_TEST(plan.events.size() == 200u);
  BOOST_TEST(plan.live.size() == 250u);
  std::vector<int> seen(200, 0);
  std::set<std::size_t> resubmitted;
  for (const auto& submission : plan.live) {
    if (submission.resubmission) {
      BOOST_TEST(seen[submission.event] == 1); // the original went first
      BOOST_TEST(resubmitted.insert(submission.event).second);
    }
    ++seen[submission.event];
  }
  for (auto count : seen)
    BOOST_TEST(count >= 1);
  BOOST_TEST(plan.late.size() == 20u);
  BOOST_TEST(std::is_sorted(plan.late.begin(), plan.late.end()));
}

BOOST_AUTO_TEST_CASE(the_plan_is_a_function_of_the_seed) {
  auto a = make_load_plan(options_for(100, 0.3, 0.3));
  auto b = make_load_plan(options_for(100, 0.3, 0.3));
  BOOST_TEST(a.late == b.late);
  BOOST_REQUIRE(a.live.size() == b.live.size());
  for (std::size_t i = 0; i < a.live.size(); ++i)
    BOOST_TEST(a.live[i].event == b.live[i].event);
  auto other = options_for(100, 0.3, 0.3);
  other.seed = 43;
  BOOST_TEST(make_load_plan(other).late != a.late);
}

BOOST_AUTO_TEST_CASE(a_batch_body_holds_each_event_body_in_order) {
  auto plan = make_load_plan(options_for(5, 0, 0));
  auto body = batch_body(plan, {3, 0, 3});
  auto parsed = json::parse(body).as_object();
  BOOST_TEST(parsed.size() == 1u); // "messages" only
  const auto& messages = parsed.at("messages").as_array();
  BOOST_REQUIRE(messages.size() == 3u);
  BOOST_TEST(messages[0].at("biz_id").as_string() == "t-3");
  BOOST_TEST(messages[1].at("biz_id").as_string() == "t-0");
  // Each item is the single POST's body byte for byte, so a retry is the same request.
  BOOST_TEST(json::serialize(messages[1]) == plan.events[0].body);
  BOOST_TEST(body == R"({"messages":[)" + plan.events[3].body + "," + plan.events[0].body + "," +
                         plan.events[3].body + "]}");
  BOOST_TEST(batch_body(plan, {1}) == R"({"messages":[)" + plan.events[1].body + "]}");
}

BOOST_AUTO_TEST_CASE(choose_events_takes_the_rounded_share) {
  BOOST_TEST(choose_events(10, 0, 1).empty());
  BOOST_TEST(choose_events(10, 1, 1).size() == 10u);
  BOOST_TEST(choose_events(10, 0.26, 1).size() == 3u);
  auto chosen = choose_events(1000, 0.5, 1);
  BOOST_TEST(std::set<std::size_t>(chosen.begin(), chosen.end()).size() == 500u);
}

BOOST_AUTO_TEST_SUITE_END()
