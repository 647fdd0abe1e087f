#include "tools/api_answers.hpp"
#include "tools/metrics_text.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::tools;

BOOST_AUTO_TEST_SUITE(api_answers_tests)

BOOST_AUTO_TEST_CASE(submit_answer) {
  auto answer = parse_submit_answer(
      R"({"message_id":"m1","trace_id":"t","tasks":[{"task_id":"a","channel":"sms","status":"PENDING","duplicate":false},{"task_id":"b","channel":"app","status":"SENT","duplicate":true}]})");
  BOOST_REQUIRE(answer);
  BOOST_TEST(answer->message_id == "m1");
  BOOST_REQUIRE(answer->tasks.size() == 2u);
  BOOST_TEST(answer->tasks[1].task_id == "b");
  BOOST_TEST(answer->tasks[1].channel == "app");
  BOOST_TEST(answer->tasks[1].duplicate);
  for (auto bad : {"", "[]", "{}", R"({"message_id":"m"})", R"({"message_id":"m","tasks":[1]})",
                   R"({"message_id":"m","tasks":[{"channel":"sms"}]})"})
    BOOST_TEST(!parse_submit_answer(bad), bad);
}

BOOST_AUTO_TEST_CASE(message_view) {
  auto view = parse_message_view(
      R"({"message_id":"m1","tasks":[{"task_id":"a","channel":"sms","recipient":"+86***00","status":"SENT","attempts":2,"provider_request_id":"p1","attempt_log":[]}]})");
  BOOST_REQUIRE(view);
  BOOST_TEST(view->found);
  BOOST_REQUIRE(view->tasks.size() == 1u);
  BOOST_TEST(view->tasks[0].status == "SENT");
  BOOST_TEST(view->tasks[0].attempts == 2);
  BOOST_TEST(view->tasks[0].provider_request_id == "p1");
  BOOST_TEST(!parse_message_view(R"({"error":{"code":"not_found"}})"));
}

BOOST_AUTO_TEST_CASE(provider_records) {
  auto records = parse_provider_records(
      R"({"calls":5,"effective_deliveries":3,"duplicate_effective_deliveries":1,"ids_delivered_more_than_once":["x"]})",
      R"({"count":2,"ids":["x","y"]})");
  BOOST_REQUIRE(records);
  BOOST_TEST(records->calls == 5u);
  BOOST_TEST(records->duplicate_effective_deliveries == 1u);
  BOOST_TEST(records->ids_delivered_more_than_once == std::vector<std::string>{"x"});
  BOOST_TEST(records->delivered_ids.size() == 2u);
  BOOST_TEST(!parse_provider_records("", R"({"ids":[]})"));
  BOOST_TEST(!parse_provider_records("{}", "{}"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(metrics_text_tests)

BOOST_AUTO_TEST_CASE(sums_every_series_of_one_name) {
  const char* text = "# HELP herald_retry_queue_depth Tasks waiting\n"
                     "# TYPE herald_retry_queue_depth gauge\n"
                     "herald_retry_queue_depth 12\n"
                     "herald_retry_queue_depth_max 99\n"
                     "herald_ambiguous_resends_total{channel=\"sms\"} 2\n"
                     "herald_ambiguous_resends_total{channel=\"a}b\"} 3.5\n";
  BOOST_TEST(*metric_sum(text, "herald_retry_queue_depth") == 12.0);
  BOOST_TEST(*metric_sum(text, "herald_ambiguous_resends_total") == 5.5);
  BOOST_TEST(!metric_sum(text, "herald_missing"));
  BOOST_TEST(!metric_sum("", "herald_retry_queue_depth"));
}

BOOST_AUTO_TEST_SUITE_END()
