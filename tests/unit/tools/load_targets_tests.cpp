#include "api/http_server.hpp"
#include "tools/invariant_checker.hpp"
#include "tools/load_plan.hpp"
#include "tools/load_runner.hpp"
#include "tools/load_targets.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <sstream>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::tools;
namespace json = boost::json;
namespace http = boost::beast::http;

namespace {

/// A loopback server on a free port (the defaults otherwise).
api::http_options any_port() {
  api::http_options options;
  options.port = 0;
  return options;
}

/// A loopback port nothing listens on (bound once, then closed).
host_port closed_port() {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(
      ioc, {boost::asio::ip::make_address("127.0.0.1"), std::uint16_t{0}});
  return {"127.0.0.1", acceptor.local_endpoint().port()};
}

/// What the fake nodes of one cluster share: the messages, by message id, as GET shows them.
struct fake_database {
  std::mutex mutex;
  std::map<std::string, json::object> messages;
};

/// A stand-in for one herald node: POST /v1/messages creates the message in the shared
/// database (every task SENT at once, counted on this node's herald_provider_calls_total),
/// GET /v1/messages/{id} reads it, GET /metrics shows this node's counters, the rest is 404.
class fake_node {
public:
  explicit fake_node(fake_database& database)
      : database_(database),
        server_(any_port(), [this](api::http_request request, api::respond_fn respond) {
          respond(handle(request));
        }) {
    server_.start();
  }
  ~fake_node() { server_.stop(); }

  host_port address() const { return {"127.0.0.1", server_.port()}; }
  std::size_t posts() const { return posts_; }
  std::size_t reads() const { return reads_; }

private:
  static api::http_response answer(http::status status, const json::value& body) {
    api::http_response response{status, 11};
    response.set(http::field::content_type, "application/json");
    response.body() = json::serialize(body);
    return response;
  }

  api::http_response handle(const api::http_request& request) {
    auto target = std::string(request.target());
    const std::string messages = "/v1/messages";
    if (request.method() == http::verb::post && target == messages)
      return submit(json::parse(request.body()).as_object());
    if (request.method() == http::verb::get && target.rfind(messages + "/", 0) == 0) {
      ++reads_;
      std::lock_guard<std::mutex> lock(database_.mutex);
      auto found = database_.messages.find(target.substr(messages.size() + 1));
      if (found != database_.messages.end())
        return answer(http::status::ok, found->second);
    }
    if (request.method() == http::verb::get && target == "/metrics") {
      api::http_response response{http::status::ok, 11};
      response.body() = "herald_provider_calls_total{channel=\"sms\",outcome=\"success\"} " +
                        std::to_string(successes_) +
                        "\nherald_retry_queue_depth 0\nherald_ambiguous_resends_total 1\n";
      return response;
    }
    return answer(http::status::not_found, json::object{{"error", "not found"}});
  }

  api::http_response submit(const json::object& body) {
    ++posts_;
    auto id = "msg_" + std::string(body.at("biz_id").as_string());
    std::lock_guard<std::mutex> lock(database_.mutex);
    bool created = database_.messages.count(id) == 0;
    json::array answered;
    json::array shown;
    for (const auto& channel : body.at("channels").as_array()) {
      auto task_id = id + "_" + std::string(channel.as_string());
      answered.push_back(
          json::object{{"task_id", task_id}, {"channel", channel}, {"duplicate", !created}});
      shown.push_back(json::object{{"task_id", task_id},
                                   {"channel", channel},
                                   {"status", "SENT"},
                                   {"provider_request_id", "req_" + task_id},
                                   {"attempts", 1}});
    }
    if (created) {
      successes_ += shown.size();
      database_.messages[id] = json::object{{"message_id", id}, {"tasks", shown}};
    }
    return answer(created ? http::status::accepted : http::status::ok,
                  json::object{{"message_id", id}, {"tasks", answered}});
  }

  fake_database& database_;
  std::atomic<std::size_t> posts_{0};
  std::atomic<std::size_t> reads_{0};
  std::atomic<std::size_t> successes_{0};
  api::http_server server_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(load_targets_tests)

BOOST_AUTO_TEST_CASE(a_request_goes_on_to_the_next_target_that_answers) {
  fake_database database;
  fake_node node(database);
  auto down = closed_port();
  target_clients clients({down, node.address()}, std::chrono::milliseconds(2000));
  BOOST_TEST(clients.size() == 2u);

  std::size_t answered_by = 9;
  BOOST_TEST(clients.request_any(0, "GET", "/metrics", &answered_by).status == 200);
  BOOST_TEST(answered_by == 1u);
  BOOST_TEST(clients.request_any(3, "GET", "/nothing", &answered_by).status == 404);
  BOOST_TEST(answered_by == 1u);

  auto texts = clients.read_metrics();
  BOOST_REQUIRE(texts.size() == 2u);
  BOOST_TEST(!texts[0]);
  BOOST_TEST(texts[1].has_value());

  target_clients none({down}, std::chrono::milliseconds(2000));
  BOOST_CHECK_THROW(none.request_any(0, "GET", "/metrics"), connection_error);
}

BOOST_AUTO_TEST_CASE(per_node_metrics_are_summed_over_the_nodes_that_answer) {
  std::vector<std::optional<std::string>> texts{
      std::string("herald_receipts_total{channel=\"sms\"} 3\nherald_receipts_total 1\n"),
      std::nullopt, std::string("herald_receipts_total 5\nherald_reconciled_total 2\n")};
  BOOST_TEST(*metric_sum_over(texts, "herald_receipts_total") == 9.0);
  BOOST_TEST(*metric_sum_over(texts, "herald_reconciled_total") == 2.0);
  BOOST_TEST(!metric_sum_over(texts, "herald_ambiguous_resends_total"));
  BOOST_TEST(!metric_sum_over({std::nullopt, std::nullopt}, "herald_receipts_total"));
}

BOOST_AUTO_TEST_CASE(a_run_spreads_over_the_targets_and_passes_one_down) {
  fake_database database;
  fake_node first(database);
  fake_node second(database);
  auto down = closed_port();

  load_options options;
  options.targets = {first.address(), second.address(), down};
  options.events = 90;
  options.channels = {"sms", "app"};
  options.duplicate_ratio = 0.1;
  options.late_duplicates = 0.1;
  options.concurrency = 4;
  options.drain_timeout = std::chrono::seconds(30);
  options.request_timeout = std::chrono::milliseconds(2000);
  options.biz_prefix = "spread-";
  auto plan = make_load_plan(options);
  std::ostringstream progress;
  auto run = run_load_test(options, plan, progress);
  BOOST_TEST_MESSAGE(progress.str());

  BOOST_TEST(run.live.accepted == run.live.submissions);
  BOOST_TEST(run.live.gave_up == 0u);
  BOOST_TEST(run.late.accepted == run.late.submissions);
  auto report = check_invariants(run.record);
  for (const auto& invariant : report.invariants)
    BOOST_TEST(invariant.pass, invariant.name << ": " << invariant.detail);
  BOOST_TEST(report.accepted_tasks == 180u);

  // Request r goes to target r mod 3; the down target's share goes on to the first one.
  const auto& exchanges = run.live.target_exchanges;
  const auto& refused = run.live.target_connection_errors;
  BOOST_REQUIRE(exchanges.size() == 3u);
  auto share = [&](std::size_t target) { return (run.live.requests + 2 - target) / 3; };
  BOOST_TEST(exchanges[1] == share(1));
  BOOST_TEST(exchanges[2] == share(2));
  BOOST_TEST(refused[2] == exchanges[2]);
  BOOST_TEST(refused[0] == 0u);
  BOOST_TEST(refused[1] == 0u);
  BOOST_TEST(exchanges[0] == share(0) + refused[2]);
  auto answered = [](const submit_stats& stats) {
    std::size_t n = 0;
    for (std::size_t t = 0; t < stats.target_exchanges.size(); ++t)
      n += stats.target_exchanges[t] - stats.target_connection_errors[t];
    return n;
  };
  BOOST_TEST(first.posts() + second.posts() == answered(run.live) + answered(run.late));
  BOOST_TEST(first.reads() > 0u);
  BOOST_TEST(second.reads() > 0u);

  // Each node counts its own provider calls: the run sees their sum.
  BOOST_TEST(run.delivery.available);
  BOOST_TEST(run.delivery.settled);
  BOOST_TEST(run.delivery.figures.delivered == 180.0);
  BOOST_TEST(!run.delivery.figures.counter_reset);
  BOOST_REQUIRE(run.ambiguous_resends);
  BOOST_TEST(*run.ambiguous_resends == 2.0);
}

BOOST_AUTO_TEST_SUITE_END()
