#include "providers/answer_class.hpp"

#include <array>
#include <string>
#include <utility>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(answer_class_tests)

// Only answers that will be tried again keep the provider's pause.
BOOST_AUTO_TEST_CASE(retry_after_is_kept_for_retries_only) {
  struct row {
    error_class how;
    bool keeps_retry_after;
  };
  const row table[] = {
      {error_classes::refused, false},      {error_classes::misconfigured, false},
      {error_classes::token_refused, true}, {error_classes::try_again, true},
      {error_classes::slow_down, true},     {error_classes::quota_used_up, true},
  };
  for (const auto& r : table) {
    const auto answer = classify_as(r.how, "why", 9s);
    BOOST_TEST(to_string(answer.result.outcome) == to_string(r.how.outcome));
    BOOST_TEST(answer.result.detail == "why");
    BOOST_TEST(answer.result.retry_after.has_value() == r.keeps_retry_after);
    BOOST_TEST(answer.token_invalid == r.how.token_invalid);
    BOOST_TEST(answer.config_error == r.how.config_error);
    BOOST_TEST(answer.quota_exhausted == r.how.quota_exhausted);
  }
}

BOOST_AUTO_TEST_CASE(status_classes_follow_classify_http) {
  BOOST_TEST(to_string(class_of_status(400).outcome) == "permanent");
  BOOST_TEST(to_string(class_of_status(429).outcome) == "throttled");
  BOOST_TEST(to_string(class_of_status(503).outcome) == "retryable");
  BOOST_TEST(to_string(class_of_status(200).outcome) == "success");
  BOOST_TEST(!class_of_status(401).config_error);
}

BOOST_AUTO_TEST_CASE(error_tables_are_searched_by_key) {
  constexpr std::array<std::pair<int, error_class>, 2> table{{
      {1, error_classes::try_again},
      {2, error_classes::misconfigured},
  }};
  BOOST_TEST(find_error_class(table, 2)->config_error);
  BOOST_TEST(find_error_class(table, 3) == nullptr);
}

BOOST_AUTO_TEST_CASE(confirmed_sends_keep_only_plausible_ids) {
  BOOST_TEST(to_string(confirmed("SM123").outcome) == "success");
  BOOST_TEST(confirmed("SM123").detail == "SM123");
  BOOST_TEST(confirmed("").detail == "");
  BOOST_TEST(confirmed("two words").detail == "");
  BOOST_TEST(confirmed(std::string(201, 'x')).detail == "");
  BOOST_TEST(!confirmed("SM123").retry_after.has_value());
}

BOOST_AUTO_TEST_CASE(unread_answers_are_classed_by_status_with_the_body_masked) {
  const auto answer = classify_unread_answer(502, 3s, "proxy error for +8613800001234");
  BOOST_TEST(to_string(answer.outcome) == "retryable");
  BOOST_TEST(answer.retry_after->count() == 3000);
  BOOST_TEST(answer.detail == "endpoint unavailable (502): proxy error for ***1234");
}

BOOST_AUTO_TEST_CASE(failure_details_are_masked_and_cut) {
  BOOST_TEST(failure_detail("twilio error 21211", "The 'To' number +15551234567 is not valid") ==
             "twilio error 21211: The 'To' number ***4567 is not valid");
  BOOST_TEST(failure_detail("apns BadDeviceToken (HTTP 400)", "") ==
             "apns BadDeviceToken (HTTP 400)");
  BOOST_TEST(failure_detail("x", "token=abcdef") == "x: token=***");
  BOOST_TEST(failure_detail("x", std::string(1000, 'y')).size() <= 200u);
  BOOST_TEST(failure_detail("x", "a\nb") == "x: a?b");
}

BOOST_AUTO_TEST_CASE(unix_instants_within_range) {
  BOOST_TEST(herald::domain::format_rfc3339(*unix_instant(1473799743000ms)) ==
             "2016-09-13T20:49:03.000000Z");
  BOOST_TEST(herald::domain::format_rfc3339(*unix_instant(0ms)) == "1970-01-01T00:00:00.000000Z");
  BOOST_TEST(!unix_instant(-1ms).has_value());
  BOOST_TEST(unix_instant(std::chrono::seconds{9'000'000'000}).has_value());
  BOOST_TEST(!unix_instant(std::chrono::seconds{9'999'999'999}).has_value());
  BOOST_TEST(!unix_instant(std::chrono::milliseconds::max()).has_value());
}

BOOST_AUTO_TEST_CASE(answers_parse_as_json_objects_only) {
  BOOST_TEST(parse_answer_object(R"({"a":1})").has_value());
  for (const std::string bad : {"", "null", "[1]", "\"x\"", "{", "{\"a\":1", "<xml/>", "{} {}"})
    BOOST_TEST(!parse_answer_object(bad).has_value(), "accepted " << bad);
  const std::string padded = "{\"a\":\"" + std::string(max_answer_bytes, 'x') + "\"}";
  BOOST_TEST(!parse_answer_object(padded).has_value());
}

BOOST_AUTO_TEST_CASE(fields_are_read_only_with_their_type) {
  const auto object =
      *parse_answer_object(R"({"s":"text","i":-7,"d":1.5,"n":"12","big":18446744073709551615})");
  BOOST_TEST(string_field(object, "s") == "text");
  BOOST_TEST(string_field(object, "i") == "");
  BOOST_TEST(string_field(object, "missing") == "");
  BOOST_TEST(*integer_field(object, "i") == -7);
  BOOST_TEST(!integer_field(object, "d").has_value());
  BOOST_TEST(!integer_field(object, "n").has_value());
  BOOST_TEST(!integer_field(object, "big").has_value());
  BOOST_TEST(!integer_field(object, "missing").has_value());
}

BOOST_AUTO_TEST_CASE(access_tokens_need_a_token_and_a_positive_lifetime) {
  const auto good = read_access_token(*parse_answer_object(
      R"({"access_token":"ya29.c.abc","expires_in":3599,"token_type":"Bearer"})"));
  BOOST_TEST(good.access_token == "ya29.c.abc");
  BOOST_TEST(good.expires_in.count() == 3599);
  BOOST_TEST(good.error == "");
  for (const char* bad :
       {R"({"expires_in":7200})", R"({"access_token":"","expires_in":7200})",
        R"({"access_token":"t"})", R"({"access_token":"t","expires_in":0})",
        R"({"access_token":"t","expires_in":-1})", R"({"access_token":"t","expires_in":"7200"})",
        R"({"access_token":7,"expires_in":7200})"}) {
    const auto answer = read_access_token(*parse_answer_object(bad));
    BOOST_TEST(answer.access_token == "", bad);
    BOOST_TEST(!answer.error.empty(), bad);
  }
}

BOOST_AUTO_TEST_SUITE_END()
