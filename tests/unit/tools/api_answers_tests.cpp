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

BOOST_AUTO_TEST_CASE(batch_answer_one_result_per_item_in_order) {
  auto results = parse_batch_answer(
      R"({"results":[
        {"status":202,"message_id":"m1","trace_id":"t1","tasks":[{"task_id":"a","channel":"sms","status":"PENDING","duplicate":false}]},
        {"status":400,"error":{"code":"invalid_field","message":"to.sms is not E.164","field":"to.sms"}},
        {"status":200,"message_id":"m2","trace_id":"t2","tasks":[{"task_id":"b","channel":"app","status":"SENT","duplicate":true}]},
        {"status":503,"error":{"code":"overloaded","message":"try again"}},
        {"status":202,"message_id":"m3"}]})",
      5);
  BOOST_REQUIRE(results);
  BOOST_REQUIRE(results->size() == 5u);
  const auto& r = *results;
  BOOST_TEST(r[0].status == 202);
  BOOST_REQUIRE(r[0].answer);
  BOOST_TEST(r[0].answer->message_id == "m1");
  BOOST_TEST(r[0].answer->tasks.at(0).task_id == "a");
  BOOST_TEST(!r[0].answer->tasks.at(0).duplicate);
  BOOST_TEST(r[1].status == 400);
  BOOST_TEST(!r[1].answer);
  BOOST_TEST(r[1].error_code == "invalid_field");
  BOOST_TEST(r[2].status == 200);
  BOOST_REQUIRE(r[2].answer);
  BOOST_TEST(r[2].answer->message_id == "m2");
  BOOST_TEST(r[2].answer->tasks.at(0).duplicate);
  BOOST_TEST(r[3].status == 503);
  BOOST_TEST(r[3].error_code == "overloaded");
  // A 2xx item without tasks is accepted but not understood.
  BOOST_TEST(r[4].status == 202);
  BOOST_TEST(!r[4].answer);
}

BOOST_AUTO_TEST_CASE(batch_answer_of_another_shape_is_refused) {
  const char* one = R"({"results":[{"status":202,"message_id":"m","tasks":[]}]})";
  BOOST_TEST(parse_batch_answer(one, 1).has_value());
  BOOST_TEST(!parse_batch_answer(one, 2)); // a result missing: nothing can be matched to items
  BOOST_TEST(!parse_batch_answer(R"({"results":[]})", 1));
  for (auto bad : {"", "[]", R"({"error":{"code":"overloaded"}})", R"({"results":{}})",
                   R"({"results":[{"message_id":"m"}]})", R"({"results":[{"status":"202"}]})",
                   R"({"results":[{"status":2020}]})", R"({"results":[7]})"})
    BOOST_TEST(!parse_batch_answer(bad, 1), bad);
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

BOOST_AUTO_TEST_CASE(stats_answer) {
  auto stats = parse_stats_answer(
      R"({"from":null,"to":null,"channels":[{"channel":"sms","accepted":5,"sent":1,"delivered":2,"undelivered":1,"retry_wait":1,"delivery_rate":0.5}],"total":{"accepted":5,"sent":1,"delivered":2,"undelivered":1,"retry_wait":1,"delivery_rate":0.5}})");
  BOOST_REQUIRE(stats);
  BOOST_REQUIRE(stats->channels.count("sms"));
  const auto& sms = stats->channels.at("sms");
  BOOST_TEST(sms.accepted == 5u);
  BOOST_TEST(sms.states.at("DELIVERED") == 2u);
  BOOST_TEST(sms.states.at("RETRY_WAIT") == 1u);
  BOOST_TEST(sms.states.at("READ") == 0u); // absent counts as 0
  BOOST_TEST(sms.states.size() == all_task_states().size());
  BOOST_CHECK(stats->total == sms);
  for (auto bad : {"", "{}", R"({"channels":[],"total":{}})",
                   R"({"channels":[{"accepted":1}],"total":{"accepted":1}})",
                   R"({"channels":{},"total":{"accepted":1}})"})
    BOOST_TEST(!parse_stats_answer(bad), bad);
}

BOOST_AUTO_TEST_CASE(provider_stats) {
  auto stats = parse_provider_stats(
      R"({"calls":{},"requests":{"accepted":10,"without_receipt":2,"receipts_pending":1,"statuses":{"delivered":8,"read":2}},"receipts":{"planned":12,"dropped":2,"duplicated":3,"acknowledged":13,"failed":1,"max_lag_ms":7}})");
  BOOST_REQUIRE(stats);
  BOOST_TEST(stats->posting);
  BOOST_TEST(stats->requests == 10u);
  BOOST_TEST(stats->without_receipt == 2u);
  BOOST_TEST(stats->receipts_pending == 1u);
  BOOST_TEST(stats->dropped == 2u);
  BOOST_TEST(stats->duplicated == 3u);
  BOOST_TEST(stats->acknowledged == 13u);
  BOOST_TEST(stats->failed == 1u);
  BOOST_TEST(stats->max_lag_ms == 7u);
  BOOST_TEST(stats->statuses.at("read") == 2u);
  auto quiet = parse_provider_stats(R"({"requests":{"accepted":1},"receipts":null})");
  BOOST_REQUIRE(quiet);
  BOOST_TEST(!quiet->posting);
  BOOST_TEST(!parse_provider_stats(R"({"error":"not_found"})")); // an older sim-provider
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

BOOST_AUTO_TEST_CASE(sums_the_series_with_one_label_value) {
  // prometheus-cpp's shape: labels sorted by name, a value that may hold quotes and commas.
  const char* text =
      "# HELP herald_provider_calls_total Provider calls by outcome\n"
      "# TYPE herald_provider_calls_total counter\n"
      "herald_provider_calls_total{channel=\"sms\",outcome=\"success\"} 40\n"
      "herald_provider_calls_total{channel=\"sms\",outcome=\"retryable\"} 7\n"
      "herald_provider_calls_total{channel=\"app\",outcome=\"success\"} 2 1700000000000\n"
      "herald_provider_calls_total{channel=\"x,outcome=\\\"success\\\"\",outcome=\"timeout\"} 100\n"
      "herald_provider_calls_total{outcome=\"successful\"} 1000\n"
      "herald_provider_calls_totals{outcome=\"success\"} 5000\n"
      "herald_provider_calls_total{outcome=\"success\"} 0.5\n";
  BOOST_TEST(*metric_sum(text, "herald_provider_calls_total", "outcome", "success") == 42.5);
  BOOST_TEST(*metric_sum(text, "herald_provider_calls_total", "outcome", "timeout") == 100.0);
  BOOST_TEST(*metric_sum(text, "herald_provider_calls_total") == 1149.5);
  BOOST_TEST(*metric_sum(text, "herald_provider_calls_total", "channel", "sms") == 47.0);
  BOOST_TEST(!metric_sum(text, "herald_provider_calls_total", "outcome", "permanent"));
  BOOST_TEST(!metric_sum(text, "herald_provider_calls_total", "result", "success"));
  // A family with no series yet (no call made) has no sample at all.
  BOOST_TEST(!metric_sum("# TYPE herald_provider_calls_total counter\n",
                         "herald_provider_calls_total", "outcome", "success"));
}

BOOST_AUTO_TEST_SUITE_END()
