// The built herald binary SIGKILLed while a provider call is in flight: restarted under the
// same name (host and port), it resends that task at once — same provider request id, counted
// as an ambiguous resend — instead of after the lease and a sweep.

#include "support/herald_process.hpp"
#include "support/herald_server.hpp"

#include <csignal>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

/// One sms channel whose calls take `latency_ms`; lease and sweep far beyond the test's wait.
std::string config_with_latency(int latency_ms) {
  return R"({"sweep_interval_ms": 600000, "channels": [{"name": "sms", "type": "simulated",
    "latency_ms": )" +
         std::to_string(latency_ms) + R"(, "lease_ms": 600000}]})";
}

/// The sms task of a message as GET /v1/messages shows it; empty when it cannot be read.
json::object sms_task(std::uint16_t port, const std::string& message_id) {
  auto response = request(host, port, "GET", "/v1/messages/" + message_id);
  if (response.status != 200)
    return {};
  return json::parse(response.body).at("tasks").as_array().at(0).as_object();
}

/// Polls the task every 20 ms until its status is `status`, at most `timeout`.
bool wait_for_status(std::uint16_t port, const std::string& message_id, const std::string& status,
                     std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto task = sms_task(port, message_id);
    if (task.contains("status") && task.at("status").as_string() == status)
      return true;
    std::this_thread::sleep_for(20ms); // polling a condition, bounded
  }
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(restart_tests)

BOOST_AUTO_TEST_CASE(a_restarted_node_resends_its_in_flight_task_at_once) {
  temp_dir dir{"herald-restart"};
  const auto port = free_port();
  const auto database = "sqlite:" + dir.file("herald.db");
  auto serve = [&](const std::string& config_name, int latency_ms) {
    write_file(dir.file(config_name), config_with_latency(latency_ms));
    return std::vector<std::string>{
        "serve",    "--listen",           host + ":" + std::to_string(port), "--db", database,
        "--config", dir.file(config_name)};
  };

  std::string message_id;
  {
    herald_process first(serve("slow.json", 600000), dir.file("first.log"));
    BOOST_REQUIRE(first.wait_ready(host, port));
    auto accepted =
        request(host, port, "POST", "/v1/messages",
                R"({"biz_type":"RESTART","biz_id":"r-1","user_id":"u-1","channels":["sms"],)"
                R"("to":{"sms":"+8613800000000"},"content":{"body":"b"}})",
                json_headers());
    BOOST_REQUIRE_EQUAL(accepted.status, 202);
    message_id = std::string(json::parse(accepted.body).at("message_id").as_string());
    BOOST_REQUIRE(wait_for_status(port, message_id, "SENDING", 10s)); // the call is in flight
    first.signal(SIGKILL);
    BOOST_REQUIRE(first.wait_exit(10s).has_value());
  }
  herald_process second(serve("fast.json", 0), dir.file("second.log"));
  BOOST_REQUIRE(second.wait_ready(host, port));
  // Lease and sweep are 10 minutes away: only resuming its own leases sends it this soon.
  BOOST_TEST(wait_for_status(port, message_id, "SENT", 10s), second.log());
  auto task = sms_task(port, message_id);
  BOOST_TEST(task.at("attempts").as_int64() == 1);
  auto metrics = request(host, port, "GET", "/metrics").body;
  BOOST_TEST(metric_sum(metrics, "herald_ambiguous_resends_total", {"channel=\"sms\""}) == 1.0);
  BOOST_TEST(second.log().find("herald.leases_resumed") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
