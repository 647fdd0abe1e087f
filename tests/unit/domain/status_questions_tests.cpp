#include "domain/status_questions.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using namespace std::chrono_literals;

namespace {

const timestamp now = from_unix_micros(1'800'000'000LL * 1'000'000);

retry_policy three_questions() {
  retry_policy questions;
  questions.schedule = {1s, 4s};
  questions.jitter = 0;
  questions.max_attempts = 3;
  return questions;
}

} // namespace

BOOST_AUTO_TEST_SUITE(status_questions_tests)

BOOST_AUTO_TEST_CASE(default_policy_asks_six_times_over_about_half_an_hour) {
  const auto questions = default_question_policy();
  BOOST_TEST(questions.max_attempts == 6u);
  BOOST_TEST(
      (questions.schedule == std::vector<std::chrono::milliseconds>{10s, 1min, 5min, 30min}));
}

BOOST_AUTO_TEST_CASE(an_unanswered_question_is_asked_again_after_the_schedule) {
  const auto first = after_unanswered_question(three_questions(), 0, now, std::nullopt, 0.5);
  BOOST_TEST(first.asked == 1u);
  BOOST_REQUIRE(first.ask_again_at.has_value());
  BOOST_TEST((*first.ask_again_at == now + 1s));
  BOOST_TEST(first.why_stopped.empty());

  const auto second = after_unanswered_question(three_questions(), 1, now, std::nullopt, 0.5);
  BOOST_TEST(second.asked == 2u);
  BOOST_REQUIRE(second.ask_again_at.has_value());
  BOOST_TEST((*second.ask_again_at == now + 4s));
}

BOOST_AUTO_TEST_CASE(the_last_allowed_question_stops_the_asking) {
  const auto last = after_unanswered_question(three_questions(), 2, now, std::nullopt, 0.5);
  BOOST_TEST(last.asked == 3u);
  BOOST_TEST(!last.ask_again_at.has_value());
  BOOST_TEST(last.why_stopped == "3 status questions without an answer, the last allowed");
}

BOOST_AUTO_TEST_CASE(expire_at_bounds_the_next_question) {
  const auto before_it = after_unanswered_question(three_questions(), 0, now, now + 1s, 0.5);
  BOOST_TEST(before_it.ask_again_at.has_value()); // exactly at expire_at still asks

  const auto past_it = after_unanswered_question(three_questions(), 0, now, now + 999ms, 0.5);
  BOOST_TEST(!past_it.ask_again_at.has_value());
  BOOST_TEST(past_it.asked == 1u);
  BOOST_TEST(past_it.why_stopped.find("expire_at passes before the next one") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
