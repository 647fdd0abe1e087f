#include "observability/metrics.hpp"

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace {

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string current; std::getline(in, current);)
    if (current == line)
      return true;
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(metrics_tests)

BOOST_AUTO_TEST_CASE(counters_render_with_exact_names_and_labels) {
  herald::metrics m;
  m.message_received();
  m.message_received();
  for (int i = 0; i < 3; ++i)
    m.task_created("sms");
  m.task_created("app");
  m.task_duplicate("wechat");
  m.provider_call("sms", herald::call_outcome::success);
  m.provider_call("sms", herald::call_outcome::success);
  m.provider_call("sms", herald::call_outcome::timeout);
  m.ambiguous_resend("app");
  m.store_write_retry("sms");
  m.queue_overflow("email");

  const std::string text = m.render();
  BOOST_TEST_INFO(text);
  BOOST_TEST(has_line(text, "herald_messages_received_total 2"));
  BOOST_TEST(has_line(text, R"(herald_tasks_created_total{channel="sms"} 3)"));
  BOOST_TEST(has_line(text, R"(herald_tasks_created_total{channel="app"} 1)"));
  BOOST_TEST(has_line(text, R"(herald_tasks_duplicate_total{channel="wechat"} 1)"));
  BOOST_TEST(has_line(text, R"(herald_provider_calls_total{channel="sms",outcome="success"} 2)"));
  BOOST_TEST(has_line(text, R"(herald_provider_calls_total{channel="sms",outcome="timeout"} 1)"));
  BOOST_TEST(has_line(text, R"(herald_ambiguous_resends_total{channel="app"} 1)"));
  BOOST_TEST(has_line(text, R"(herald_store_write_retries_total{channel="sms"} 1)"));
  BOOST_TEST(has_line(text, R"(herald_channel_queue_overflows_total{channel="email"} 1)"));
  BOOST_TEST(has_line(text, "# TYPE herald_tasks_created_total counter"));
  // The serializer must not append a second suffix.
  BOOST_TEST(text.find("_total_total") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(unlabelled_series_exist_before_the_first_event) {
  herald::metrics m;
  const std::string text = m.render();
  BOOST_TEST_INFO(text);
  BOOST_TEST(has_line(text, "herald_messages_received_total 0"));
  BOOST_TEST(has_line(text, "herald_retry_queue_depth 0"));
  BOOST_TEST(has_line(text, "herald_ingest_latency_seconds_count 0"));
}

BOOST_AUTO_TEST_CASE(gauge_is_set_not_added) {
  herald::metrics m;
  m.retry_queue_depth(7);
  m.retry_queue_depth(3);
  const std::string text = m.render();
  BOOST_TEST_INFO(text);
  BOOST_TEST(has_line(text, "# TYPE herald_retry_queue_depth gauge"));
  BOOST_TEST(has_line(text, "herald_retry_queue_depth 3"));
}

BOOST_AUTO_TEST_CASE(histograms_bucket_observations) {
  herald::metrics m;
  m.ingest_latency(0.0004);
  m.ingest_latency(0.003);
  m.ingest_latency(10);
  m.delivery_latency("sms", 0.02);
  m.delivery_latency("sms", 700);
  const std::string text = m.render();
  BOOST_TEST_INFO(text);
  BOOST_TEST(has_line(text, "# TYPE herald_ingest_latency_seconds histogram"));
  BOOST_TEST(has_line(text, "herald_ingest_latency_seconds_count 3"));
  BOOST_TEST(has_line(text, R"(herald_ingest_latency_seconds_bucket{le="0.0005"} 1)"));
  BOOST_TEST(has_line(text, R"(herald_ingest_latency_seconds_bucket{le="0.005"} 2)"));
  BOOST_TEST(has_line(text, R"(herald_ingest_latency_seconds_bucket{le="5"} 2)"));
  BOOST_TEST(has_line(text, R"(herald_ingest_latency_seconds_bucket{le="+Inf"} 3)"));
  BOOST_TEST(has_line(text, R"(herald_delivery_latency_seconds_count{channel="sms"} 2)"));
  BOOST_TEST(
      has_line(text, R"(herald_delivery_latency_seconds_bucket{channel="sms",le="0.05"} 1)"));
  BOOST_TEST(has_line(text, R"(herald_delivery_latency_seconds_bucket{channel="sms",le="600"} 1)"));
  BOOST_TEST(
      has_line(text, R"(herald_delivery_latency_seconds_bucket{channel="sms",le="+Inf"} 2)"));
}

BOOST_AUTO_TEST_CASE(outcome_names) {
  BOOST_TEST(to_string(herald::call_outcome::success) == "success");
  BOOST_TEST(to_string(herald::call_outcome::retryable) == "retryable");
  BOOST_TEST(to_string(herald::call_outcome::permanent) == "permanent");
  BOOST_TEST(to_string(herald::call_outcome::timeout) == "timeout");
  BOOST_TEST(to_string(herald::call_outcome::throttled) == "throttled");
}

BOOST_AUTO_TEST_CASE(concurrent_increments_are_all_counted) {
  herald::metrics m;
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&m] {
      for (int i = 0; i < 1000; ++i) {
        m.task_created("sms");
        m.provider_call("sms", herald::call_outcome::retryable);
      }
    });
  for (auto& worker : workers)
    worker.join();
  const std::string text = m.render();
  BOOST_TEST_INFO(text);
  BOOST_TEST(has_line(text, R"(herald_tasks_created_total{channel="sms"} 4000)"));
  BOOST_TEST(
      has_line(text, R"(herald_provider_calls_total{channel="sms",outcome="retryable"} 4000)"));
}

BOOST_AUTO_TEST_SUITE_END()
