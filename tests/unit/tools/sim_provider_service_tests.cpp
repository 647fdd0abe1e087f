#include "api/http_server.hpp"
#include "support/http_client.hpp"
#include "tools/http_client.hpp"
#include "tools/sim_provider_service.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
using tools::sim_provider_options;
namespace json = boost::json;

namespace {

/// The sim-provider's handler behind a real http_server on a free loopback port.
class running_provider {
public:
  explicit running_provider(sim_provider_options options)
      : service_(options), server_(server_options(), service_.handler()) {
    server_.start();
  }
  ~running_provider() {
    server_.stop();
    service_.shutdown();
  }

  std::uint16_t port() const { return server_.port(); }

  /// POSTs a webhook-shaped call for `id` on a fresh connection.
  test::http_response call(const std::string& endpoint, const std::string& id, int attempt) {
    auto headers = test::json_headers();
    headers.emplace_back("webhook-id", id);
    headers.emplace_back("Idempotency-Key", id);
    headers.emplace_back("X-Herald-Attempt", std::to_string(attempt));
    return test::request("127.0.0.1", port(), "POST", endpoint, R"({"type":"herald.message"})",
                         headers);
  }

  json::object get(const std::string& target) {
    auto response = test::request("127.0.0.1", port(), "GET", target);
    BOOST_REQUIRE_EQUAL(response.status, 200);
    return json::parse(response.body).as_object();
  }

private:
  static api::http_options server_options() {
    api::http_options options;
    options.port = 0;
    options.io_threads = 1;
    return options;
  }

  tools::sim_provider_service service_;
  api::http_server server_;
};

sim_provider_options options(bool dedupe) {
  sim_provider_options options;
  options.listen = {"127.0.0.1", 0};
  options.dedupe_by_id = dedupe;
  return options;
}

std::string provider_id(const test::http_response& response) {
  return std::string(json::parse(response.body).at("id").as_string());
}

} // namespace

BOOST_AUTO_TEST_SUITE(sim_provider_service_tests)

BOOST_AUTO_TEST_CASE(dedupe_by_id_delivers_a_resend_once_over_a_real_socket) {
  running_provider provider(options(true));
  auto first = provider.call("/sms", "req-1", 1);
  auto resend = provider.call("/sms", "req-1", 2);
  auto other = provider.call("/app", "req-2", 1);
  BOOST_REQUIRE_EQUAL(first.status, 200);
  BOOST_REQUIRE_EQUAL(resend.status, 200);
  BOOST_REQUIRE_EQUAL(other.status, 200);
  BOOST_TEST(provider_id(first) == provider_id(resend));
  BOOST_TEST(provider_id(first) != provider_id(other));

  auto summary = provider.get("/calls/summary");
  BOOST_TEST(summary.at("calls").to_number<std::uint64_t>() == 3u);
  BOOST_TEST(summary.at("distinct_ids").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(summary.at("effective_deliveries").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(summary.at("duplicate_effective_deliveries").to_number<std::uint64_t>() == 0u);
  BOOST_TEST(summary.at("by_endpoint").at("/sms").at("calls").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(
      summary.at("by_endpoint").at("/sms").at("effective_deliveries").to_number<std::uint64_t>() ==
      1u);

  // The tools' own client reads the id list, filtered by an encoded endpoint.
  tools::http_client client({"127.0.0.1", provider.port()}, std::chrono::seconds(5));
  auto ids = client.request("GET", "/calls/ids?endpoint=%2Fsms");
  BOOST_REQUIRE_EQUAL(ids.status, 200);
  BOOST_TEST(json::parse(ids.body).at("ids") == json::parse(R"(["req-1"])"));
  BOOST_TEST(client.request("POST", "/calls/reset").status == 200);
  BOOST_TEST(provider.get("/calls/summary").at("calls").to_number<std::uint64_t>() == 0u);
}

BOOST_AUTO_TEST_CASE(without_dedupe_a_resend_is_a_second_delivery) {
  running_provider provider(options(false));
  auto first = provider.call("/sms", "req-1", 1);
  auto resend = provider.call("/sms", "req-1", 2);
  BOOST_TEST(provider_id(first) != provider_id(resend));
  auto summary = provider.get("/calls/summary");
  BOOST_TEST(summary.at("effective_deliveries").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(summary.at("duplicate_effective_deliveries").to_number<std::uint64_t>() == 1u);
  BOOST_TEST(summary.at("ids_delivered_more_than_once") == json::parse(R"(["req-1"])"));
}

BOOST_AUTO_TEST_CASE(a_timed_out_call_was_processed_and_its_resend_is_deduplicated) {
  auto held = options(true);
  held.faults.timeout_rate = 1;
  held.hold = std::chrono::milliseconds(200);
  running_provider provider(held);
  tools::http_client client({"127.0.0.1", provider.port()}, std::chrono::seconds(5));
  BOOST_CHECK_THROW(client.request("POST", "/sms", "{}"), tools::connection_error);

  auto summary = provider.get("/calls/summary");
  BOOST_TEST(summary.at("outcomes").at("timeout").to_number<std::uint64_t>() == 1u);
  BOOST_TEST(summary.at("effective_deliveries").to_number<std::uint64_t>() ==
             1u); // no id: counted, not deduped
  BOOST_TEST(summary.at("calls_without_id").to_number<std::uint64_t>() == 1u);
}

BOOST_AUTO_TEST_CASE(faults_answer_503_and_400_without_delivering) {
  auto failing = options(false);
  failing.faults.fail_rate = 1;
  running_provider unavailable(failing);
  BOOST_TEST(unavailable.call("/sms", "a", 1).status == 503);

  auto rejecting = options(false);
  rejecting.faults.permanent_rate = 1;
  running_provider rejected(rejecting);
  BOOST_TEST(rejected.call("/sms", "a", 1).status == 400);

  BOOST_TEST(
      unavailable.get("/calls/summary").at("effective_deliveries").to_number<std::uint64_t>() ==
      0u);
  BOOST_TEST(
      rejected.get("/calls/summary").at("outcomes").at("permanent").to_number<std::uint64_t>() ==
      1u);
  BOOST_TEST(rejected.get("/calls/ids").at("ids").as_array().empty());
}

BOOST_AUTO_TEST_CASE(latency_delays_the_answer_and_recent_lists_calls) {
  auto slow = options(false);
  slow.latency = std::chrono::milliseconds(100);
  running_provider provider(slow);
  auto started = std::chrono::steady_clock::now();
  BOOST_TEST(provider.call("/sms", "a", 3).status == 200);
  BOOST_CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(100));
  auto recent = provider.get("/calls/recent?limit=5").at("calls").as_array();
  BOOST_REQUIRE_EQUAL(recent.size(), 1u);
  BOOST_TEST(recent[0].at("attempt").as_string() == "3");
  BOOST_TEST(recent[0].at("id").as_string() == "a");
  BOOST_TEST(recent[0].at("outcome").as_string() == "success");
  auto wrong = test::request("127.0.0.1", provider.port(), "GET", "/sms");
  BOOST_TEST(wrong.status == 405);
}

BOOST_AUTO_TEST_SUITE_END()
