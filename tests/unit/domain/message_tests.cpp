#include "domain/message.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

BOOST_AUTO_TEST_SUITE(message_tests)

BOOST_AUTO_TEST_CASE(priority_round_trips) {
  for (priority value : {priority::high, priority::normal, priority::low}) {
    const auto parsed = parse_priority(to_string(value));
    BOOST_REQUIRE(parsed.has_value());
    BOOST_TEST((*parsed == value));
  }
  BOOST_TEST(to_string(priority::high) == "high");
  BOOST_TEST(to_string(priority::normal) == "normal");
  BOOST_TEST(to_string(priority::low) == "low");
}

BOOST_AUTO_TEST_CASE(category_round_trips) {
  for (category value :
       {category::verification, category::transactional, category::marketing, category::system}) {
    const auto parsed = parse_category(to_string(value));
    BOOST_REQUIRE(parsed.has_value());
    BOOST_TEST((*parsed == value));
  }
  BOOST_TEST(to_string(category::verification) == "verification");
  BOOST_TEST(to_string(category::transactional) == "transactional");
  BOOST_TEST(to_string(category::marketing) == "marketing");
  BOOST_TEST(to_string(category::system) == "system");
}

BOOST_AUTO_TEST_CASE(unknown_text_is_refused) {
  for (const char* text : {"", "HIGH", "urgent", "normal ", "medium"})
    BOOST_TEST(!parse_priority(text).has_value(), text);
  for (const char* text : {"", "Marketing", "promo", "system\n"})
    BOOST_TEST(!parse_category(text).has_value(), text);
}

BOOST_AUTO_TEST_CASE(a_fallback_chain_follows_each_fallback_once) {
  const std::map<std::string, std::string> fallback_of = {
      {"sms", "email"}, {"email", "inapp"}, {"inapp", "sms"}, {"app", ""}, {"wechat", "wechat"}};
  BOOST_TEST(fallback_chain(fallback_of, "sms") == (std::vector<std::string>{"email", "inapp"}));
  BOOST_TEST(fallback_chain(fallback_of, "inapp") == (std::vector<std::string>{"sms", "email"}));
  BOOST_TEST(fallback_chain(fallback_of, "app").empty());    // no fallback
  BOOST_TEST(fallback_chain(fallback_of, "wechat").empty()); // only itself
  BOOST_TEST(fallback_chain(fallback_of, "voice").empty());  // not configured
}

BOOST_AUTO_TEST_CASE(a_fallback_keeps_the_message_and_passes_channels_without_an_address) {
  const id_secret secret{"message-tests"};
  delivery failed;
  failed.task_id = "tsk_1";
  failed.message_id = "msg_1";
  failed.key = message_key{"default", "LOGIN_CODE", "c-1", "u-1"};
  failed.channel = "sms";
  failed.recipients = {{"sms", "+8613800000000"}, {"inapp", "u-1"}};
  failed.title = "Code";
  failed.body = "123456";
  failed.category = category::verification;
  failed.priority = priority::high;
  const auto now = *parse_rfc3339("2026-12-06T10:00:00Z");
  BOOST_TEST(!first_fallback_plan(failed, {"email"}, secret, now).has_value());
  const auto plan = first_fallback_plan(failed, {"email", "inapp"}, secret, now);
  BOOST_REQUIRE(plan.has_value());
  BOOST_TEST(plan->tasks.at(0).channel == "inapp");
  BOOST_TEST(plan->tasks.at(0).recipient == "u-1");
  BOOST_TEST((plan->message.category == category::verification));
  BOOST_TEST((plan->message.priority == priority::high));
  BOOST_TEST(plan->tasks.at(0).own_content->body == "123456");
  BOOST_TEST(plan->tasks.at(0).id == task_of(failed.key, "inapp", "u-1", secret).id);
  // As dispatched again, the fallback's delivery carries the category on.
  BOOST_TEST((make_delivery(plan->message, plan->tasks.at(0)).category == category::verification));
}

BOOST_AUTO_TEST_SUITE_END()
