#include "tools/call_record.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::tools;
namespace json = boost::json;

namespace {

const auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));

} // namespace

BOOST_AUTO_TEST_SUITE(call_record_tests)

BOOST_AUTO_TEST_CASE(only_processed_calls_are_effective_deliveries) {
  call_record calls(false);
  BOOST_TEST(!calls.record("/sms", "a", "1", call_outcome::retryable, at).effective);
  BOOST_TEST(!calls.record("/sms", "a", "2", call_outcome::permanent, at).effective);
  auto timed_out = calls.record("/sms", "a", "3", call_outcome::timeout, at);
  BOOST_TEST(timed_out.effective); // processed, answer lost
  BOOST_TEST(!timed_out.provider_message_id.empty());

  auto summary = calls.summary();
  BOOST_TEST(summary.calls == 3u);
  BOOST_TEST(summary.distinct_ids == 1u);
  BOOST_TEST(summary.effective_deliveries == 1u);
  BOOST_TEST(summary.duplicate_effective_deliveries == 0u);
  BOOST_TEST(summary.outcomes["retryable"] == 1u);
  BOOST_TEST(summary.outcomes["permanent"] == 1u);
  BOOST_TEST(summary.outcomes["timeout"] == 1u);
  BOOST_TEST(summary.outcomes["success"] == 0u);
}

BOOST_AUTO_TEST_CASE(without_dedupe_a_resend_after_a_timeout_is_a_second_delivery) {
  call_record calls(false);
  auto first = calls.record("/sms", "a", "1", call_outcome::timeout, at);
  auto second = calls.record("/sms", "a", "2", call_outcome::success, at);
  calls.record("/app", "b", "1", call_outcome::success, at);
  BOOST_TEST(second.effective);
  BOOST_TEST(first.provider_message_id != second.provider_message_id);

  auto summary = calls.summary();
  BOOST_TEST(summary.effective_deliveries == 3u);
  BOOST_TEST(summary.duplicate_effective_deliveries == 1u);
  BOOST_TEST(summary.ids_delivered_more_than_once == std::vector<std::string>{"a"});
  BOOST_TEST(summary.by_endpoint["/sms"].calls == 2u);
  BOOST_TEST(summary.by_endpoint["/sms"].effective_deliveries == 2u);
  BOOST_TEST(summary.by_endpoint["/app"].effective_deliveries == 1u);
  BOOST_TEST(calls.deliveries_of("a") == 2u);
}

BOOST_AUTO_TEST_CASE(dedupe_by_id_answers_a_delivered_id_with_the_first_message_id) {
  call_record calls(true);
  auto failed = calls.record("/sms", "a", "1", call_outcome::retryable, at);
  auto first = calls.record("/sms", "a", "2", call_outcome::timeout, at);
  auto again = calls.record("/sms", "a", "3", call_outcome::success, at);
  auto lost_again = calls.record("/sms", "a", "4", call_outcome::timeout, at);
  BOOST_TEST(failed.provider_message_id.empty());
  BOOST_TEST(first.effective);
  BOOST_TEST(!again.effective);
  BOOST_TEST(again.deduplicated);
  BOOST_TEST(again.provider_message_id == first.provider_message_id);
  BOOST_TEST(!lost_again.effective);

  auto summary = calls.summary();
  BOOST_TEST(summary.calls == 4u);
  BOOST_TEST(summary.effective_deliveries == 1u);
  BOOST_TEST(summary.deduplicated == 2u);
  BOOST_TEST(summary.duplicate_effective_deliveries == 0u);
  BOOST_TEST(summary.ids_delivered_more_than_once.empty());
}

BOOST_AUTO_TEST_CASE(calls_without_an_id_are_never_deduplicated) {
  call_record calls(true);
  BOOST_TEST(calls.record("/sms", "", "", call_outcome::success, at).effective);
  BOOST_TEST(calls.record("/sms", "", "", call_outcome::success, at).effective);
  auto summary = calls.summary();
  BOOST_TEST(summary.calls_without_id == 2u);
  BOOST_TEST(summary.distinct_ids == 0u);
  BOOST_TEST(summary.effective_deliveries == 2u);
  BOOST_TEST(calls.delivered_ids().empty());
}

BOOST_AUTO_TEST_CASE(delivered_ids_filter_by_the_endpoint_of_the_first_delivery) {
  call_record calls(false);
  calls.record("/sms", "s1", "1", call_outcome::success, at);
  calls.record("/sms", "s2", "1", call_outcome::retryable, at);
  calls.record("/app", "p1", "1", call_outcome::timeout, at);
  BOOST_TEST(calls.delivered_ids() == (std::vector<std::string>{"p1", "s1"}));
  BOOST_TEST(calls.delivered_ids(std::string("/sms")) == std::vector<std::string>{"s1"});
  BOOST_TEST(calls.delivered_ids(std::string("/email")).empty());
}

BOOST_AUTO_TEST_CASE(listed_repeats_are_bounded_and_the_log_keeps_the_latest_calls) {
  call_record calls(false, 3);
  for (int i = 0; i < 5; ++i) {
    calls.record("/sms", "id" + std::to_string(i), "1", call_outcome::success, at);
    calls.record("/sms", "id" + std::to_string(i), "2", call_outcome::success, at);
  }
  auto summary = calls.summary(2);
  BOOST_TEST(summary.duplicate_effective_deliveries == 5u);
  BOOST_TEST(summary.ids_delivered_more_than_once.size() == 2u);
  auto recent = calls.recent(10);
  BOOST_REQUIRE(recent.size() == 3u);
  BOOST_TEST(recent.back().request_id == "id4");
  BOOST_TEST(recent.back().attempt == "2");
}

BOOST_AUTO_TEST_CASE(reset_forgets_everything_but_message_ids_stay_unique) {
  call_record calls(true);
  auto before = calls.record("/sms", "a", "1", call_outcome::success, at);
  calls.reset();
  BOOST_TEST(calls.summary().calls == 0u);
  auto after = calls.record("/sms", "a", "1", call_outcome::success, at);
  BOOST_TEST(after.effective);
  BOOST_TEST(after.provider_message_id != before.provider_message_id);
}

BOOST_AUTO_TEST_CASE(summary_json_has_the_documented_fields) {
  call_record calls(false);
  calls.record("/sms", "a", "1", call_outcome::success, at);
  calls.record("/sms", "a", "2", call_outcome::success, at);
  auto body = json::parse(to_json(calls.summary())).as_object();
  BOOST_TEST(body.at("calls").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(body.at("distinct_ids").to_number<std::uint64_t>() == 1u);
  BOOST_TEST(body.at("effective_deliveries").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(body.at("duplicate_effective_deliveries").to_number<std::uint64_t>() == 1u);
  BOOST_TEST(body.at("ids_delivered_more_than_once").as_array().size() == 1u);
  BOOST_TEST(body.at("by_endpoint").at("/sms").at("calls").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(body.at("outcomes").at("success").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(body.at("outcomes").at("timeout").to_number<std::uint64_t>() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
