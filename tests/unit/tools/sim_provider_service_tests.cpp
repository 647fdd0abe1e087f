#include "api/http_server.hpp"
#include "providers/webhook_signature.hpp"
#include "support/http_client.hpp"
#include "tools/http_client.hpp"
#include "tools/sim_provider_service.hpp"

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
using tools::sim_provider_options;
namespace json = boost::json;

namespace {

/// A loopback server on a free port with one IO thread.
api::http_options server_options() {
  api::http_options options;
  options.port = 0;
  options.io_threads = 1;
  return options;
}

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

  /// POSTs a webhook-shaped call for `id` on a fresh connection; `channel` goes into
  /// data.channel as herald's webhook payload has it.
  test::http_response call(const std::string& endpoint, const std::string& id, int attempt,
                           const std::string& channel = "sms") {
    auto headers = test::json_headers();
    headers.emplace_back("webhook-id", id);
    headers.emplace_back("Idempotency-Key", id);
    headers.emplace_back("X-Herald-Attempt", std::to_string(attempt));
    auto body = json::serialize(
        json::object{{"type", "herald.message"}, {"data", json::object{{"channel", channel}}}});
    return test::request("127.0.0.1", port(), "POST", endpoint, body, headers);
  }

  /// GET /status/{id}: the status, or "404".
  std::string status(const std::string& id) {
    auto response = test::request("127.0.0.1", port(), "GET", "/status/" + id);
    if (response.status == 404)
      return "404";
    BOOST_REQUIRE_EQUAL(response.status, 200);
    return std::string(json::parse(response.body).at("status").as_string());
  }

  json::object get(const std::string& target) {
    auto response = test::request("127.0.0.1", port(), "GET", target);
    BOOST_REQUIRE_EQUAL(response.status, 200);
    return json::parse(response.body).as_object();
  }

private:
  tools::sim_provider_service service_;
  api::http_server server_;
};

sim_provider_options options(bool dedupe) {
  sim_provider_options options;
  options.listen = {"127.0.0.1", 0};
  options.dedupe_by_id = dedupe;
  return options;
}

constexpr const char* receipt_secret =
    "whsec_c2ltLXByb3ZpZGVyLXRlc3Qta2V5"; // "sim-provider-test-key"

/// One receipt as herald would see it.
struct received_receipt {
  std::string path;
  std::string webhook_id;
  std::string request_id; ///< "" when the receipt named only the message id
  std::string message_id; ///< "" when it named only the request id
  std::string status;
  std::string occurred_at;
  int answered = 0;
};

/// A stand-in for herald's receipt endpoint on a real socket: verifies each POST's Standard
/// Webhooks signature with the channel's secret (a bad one is a test failure and gets 401),
/// records it and answers what `answer` says (200 by default).
class receipt_receiver {
public:
  using answer_fn = std::function<int(const received_receipt&, std::size_t nth_of_webhook_id)>;

  explicit receipt_receiver(answer_fn answer = {})
      : answer_(std::move(answer)), key_(*providers::decode_webhook_secret(receipt_secret)),
        server_(server_options(), [this](api::http_request request, api::respond_fn respond) {
          respond(receive(request));
        }) {
    server_.start();
  }
  ~receipt_receiver() { server_.stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }

  /// Waits (bounded) until `count` POSTs arrived; returns all of them, in arrival order.
  std::vector<received_receipt>
  wait_for(std::size_t count, std::chrono::milliseconds bound = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    arrived_.wait_for(lock, bound, [&] { return received_.size() >= count; });
    return received_;
  }

  std::size_t bad_signatures() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bad_signatures_;
  }

private:
  api::http_response receive(const api::http_request& request) {
    namespace http = boost::beast::http;
    received_receipt receipt;
    receipt.path = std::string(request.target());
    receipt.webhook_id = std::string(request["webhook-id"]);
    auto timestamp = std::string(request["webhook-timestamp"]);
    auto signature = std::string(request["webhook-signature"]);
    bool valid = !receipt.webhook_id.empty() && !timestamp.empty() &&
                 signature == providers::sign_webhook(key_, receipt.webhook_id,
                                                      std::stoll(timestamp), request.body());
    auto age = std::chrono::system_clock::now().time_since_epoch() -
               std::chrono::seconds(std::stoll(timestamp.empty() ? "0" : timestamp));
    valid = valid && age < std::chrono::seconds(30) && age > -std::chrono::seconds(30);
    auto body = json::parse(request.body()).as_object();
    BOOST_CHECK(body.at("type") == "herald.receipt");
    const auto& data = body.at("data").as_object();
    if (auto* id = data.if_contains("provider_request_id"))
      receipt.request_id = std::string(id->as_string());
    if (auto* id = data.if_contains("provider_message_id"))
      receipt.message_id = std::string(id->as_string());
    receipt.status = std::string(data.at("status").as_string());
    receipt.occurred_at = std::string(data.at("occurred_at").as_string());

    std::lock_guard<std::mutex> lock(mutex_);
    auto nth = ++posts_per_id_[receipt.webhook_id];
    receipt.answered = !valid ? 401 : answer_ ? answer_(receipt, nth) : 200;
    bad_signatures_ += !valid;
    received_.push_back(receipt);
    arrived_.notify_all();
    api::http_response response{static_cast<http::status>(receipt.answered), 11};
    response.set(http::field::content_type, "application/json");
    response.body() = "{}";
    return response;
  }

  answer_fn answer_;
  std::string key_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<received_receipt> received_;
  std::map<std::string, std::size_t> posts_per_id_;
  std::size_t bad_signatures_ = 0;
  api::http_server server_; // last: stopped before the state its handler uses goes away
};

sim_provider_options with_receipts(const receipt_receiver& receiver) {
  sim_provider_options options;
  options.listen = {"127.0.0.1", 0};
  options.receipts.to = tools::parse_receipt_target("--receipt-to", receiver.url());
  options.receipts.secret = receipt_secret;
  options.receipts.delay = std::chrono::milliseconds(20);
  options.receipts.concurrency = 2;
  return options;
}

/// Waits (bounded) until the provider's GET /stats satisfies `done`; returns the last one.
template <typename Done> json::object wait_for_stats(running_provider& provider, Done done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto stats = provider.get("/stats");
  while (!done(stats) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stats = provider.get("/stats");
  }
  return stats;
}

std::uint64_t count(const json::value& value) {
  return value.to_number<std::uint64_t>();
}

std::string provider_id(const test::http_response& response) {
  return std::string(json::parse(response.body).at("message_id").as_string());
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

BOOST_AUTO_TEST_CASE(answers_carry_a_provider_message_id_per_request_id) {
  running_provider provider(options(true));
  auto first = provider.call("/sms", "req-1", 1);
  BOOST_TEST(provider_id(first).rfind("sim-", 0) == 0u);
  BOOST_TEST(provider_id(provider.call("/sms", "req-1", 2)) == provider_id(first));
  BOOST_TEST(provider_id(provider.call("/sms", "req-2", 1)) != provider_id(first));
}

BOOST_AUTO_TEST_CASE(receipts_are_signed_duplicated_and_posted_in_order) {
  receipt_receiver herald;
  auto opts = with_receipts(herald);
  opts.receipts.duplicate_rate = 1;
  opts.receipts.read_rate = 1;
  opts.receipts.delay = std::chrono::milliseconds(100);
  running_provider provider(opts);

  std::map<std::string, std::string> message_ids;
  for (int i = 0; i < 8; ++i) {
    auto id = "hrq_" + std::to_string(i);
    auto answer = provider.call("/sms", id, 1, i % 2 ? "wechat" : "sms");
    BOOST_REQUIRE_EQUAL(answer.status, 200);
    message_ids[id] = provider_id(answer);
  }
  auto stats = wait_for_stats(provider, [](const json::object& s) {
    return count(s.at("receipts").at("queued")) == 0 &&
           count(s.at("requests").at("receipts_pending")) == 0;
  });
  const auto& receipts = stats.at("receipts").as_object();
  BOOST_TEST(count(receipts.at("planned")) == 16u); // delivered + read, 8 times
  BOOST_TEST(count(receipts.at("duplicated")) == 16u);
  BOOST_TEST(count(receipts.at("dropped")) == 0u);
  const auto copies = count(receipts.at("copies"));
  BOOST_TEST(copies >= 32u);
  BOOST_TEST(copies <= 48u);
  BOOST_TEST(count(receipts.at("acknowledged")) == copies);
  BOOST_TEST(count(receipts.at("failed")) == 0u);
  BOOST_TEST(count(stats.at("requests").at("without_receipt")) == 0u);

  auto received = herald.wait_for(copies);
  BOOST_REQUIRE_EQUAL(received.size(), copies);
  BOOST_TEST(herald.bad_signatures() == 0u);
  std::set<std::string> webhook_ids;
  // Per request id: arrival positions of each status, and the moments the copies tell.
  std::map<std::string, std::map<std::string, std::vector<std::size_t>>> arrivals;
  std::map<std::string, std::map<std::string, std::set<std::string>>> occurred;
  for (std::size_t n = 0; n < received.size(); ++n) {
    const auto& r = received[n];
    webhook_ids.insert(r.webhook_id);
    // Either id may be missing, never both; the one given is the right one.
    BOOST_REQUIRE(!(r.request_id.empty() && r.message_id.empty()));
    std::string id = r.request_id;
    if (id.empty())
      for (const auto& [request_id, message_id] : message_ids)
        if (message_id == r.message_id)
          id = request_id;
    BOOST_REQUIRE(message_ids.count(id));
    if (!r.message_id.empty())
      BOOST_TEST(r.message_id == message_ids[id]);
    const bool wechat = std::stoi(id.substr(4)) % 2 == 1;
    BOOST_TEST(r.path == (wechat ? "/v1/receipts/wechat" : "/v1/receipts/sms"));
    arrivals[id][r.status].push_back(n);
    occurred[id][r.status].insert(r.occurred_at);
  }
  BOOST_TEST(webhook_ids.size() == copies); // one webhook-id per copy
  BOOST_TEST(arrivals.size() == 8u);
  for (auto& [id, by_status] : arrivals) {
    BOOST_TEST_CONTEXT(id) {
      BOOST_TEST(by_status.size() == 2u);
      BOOST_TEST(by_status["delivered"].size() >= 2u);
      BOOST_TEST(by_status["read"].size() >= 2u);
      // Without --reorder-ms, a read is posted a whole delay after every delivered copy.
      BOOST_TEST(by_status["delivered"].back() < by_status["read"].front());
      BOOST_TEST(occurred[id]["delivered"].size() == 1u);
      BOOST_TEST(occurred[id]["read"].size() == 1u);
      BOOST_TEST(provider.status(id) == "read");
    }
  }
  BOOST_TEST(provider.status("hrq_never") == "404");
}

BOOST_AUTO_TEST_CASE(dropped_receipts_are_never_posted_and_status_tells_the_truth) {
  receipt_receiver herald;
  auto opts = with_receipts(herald);
  opts.receipts.drop_rate = 1;
  opts.receipts.undelivered_rate = 1;
  running_provider provider(opts);
  for (int i = 0; i < 5; ++i)
    BOOST_REQUIRE_EQUAL(provider.call("/sms", "d-" + std::to_string(i), 1).status, 200);

  auto stats = provider.get("/stats");
  BOOST_TEST(count(stats.at("receipts").at("planned")) == 5u);
  BOOST_TEST(count(stats.at("receipts").at("dropped")) == 5u);
  BOOST_TEST(count(stats.at("receipts").at("copies")) == 0u); // nothing can ever be posted
  BOOST_TEST(count(stats.at("requests").at("accepted")) == 5u);
  BOOST_TEST(count(stats.at("requests").at("without_receipt")) == 5u);
  stats = wait_for_stats(provider, [](const json::object& s) {
    return count(s.at("requests").at("statuses").at("undelivered")) == 5;
  });
  BOOST_TEST(count(stats.at("requests").at("statuses").at("undelivered")) == 5u);
  BOOST_TEST(provider.status("d-3") == "undelivered");
  BOOST_TEST(herald.wait_for(0).empty());
}

BOOST_AUTO_TEST_CASE(a_404_is_retried_under_the_same_webhook_id_a_refusal_is_not) {
  // Receipts may name only the message id, so the receiver tells the two apart by channel.
  receipt_receiver herald([](const received_receipt& r, std::size_t nth) {
    if (r.path == "/v1/receipts/broken")
      return 400;                // malformed in herald's eyes: sending it again cannot help
    return nth == 1 ? 404 : 200; // the task's SENT was not committed yet
  });
  auto opts = with_receipts(herald);
  opts.receipts.attempts = 3;
  running_provider provider(opts);
  BOOST_REQUIRE_EQUAL(provider.call("/sms", "retry-1", 1, "sms").status, 200);
  BOOST_REQUIRE_EQUAL(provider.call("/sms", "refuse-1", 1, "broken").status, 200);
  auto stats = wait_for_stats(provider, [](const json::object& s) {
    return count(s.at("requests").at("receipts_pending")) == 0;
  });
  auto received = herald.wait_for(3);
  BOOST_TEST(herald.bad_signatures() == 0u);
  std::map<std::string, std::vector<received_receipt>> by_webhook_id;
  for (const auto& r : received)
    by_webhook_id[r.webhook_id].push_back(r);
  BOOST_REQUIRE_EQUAL(by_webhook_id.size(), 2u);
  const auto& receipts = stats.at("receipts").as_object();
  BOOST_TEST(count(receipts.at("copies")) == 2u);
  BOOST_TEST(count(receipts.at("posts")) == 3u);
  BOOST_TEST(count(receipts.at("retries")) == 1u);
  BOOST_TEST(count(receipts.at("acknowledged")) == 1u);
  BOOST_TEST(count(receipts.at("failed")) == 1u);
  BOOST_TEST(count(receipts.at("refused")) == 1u);
  BOOST_TEST(count(receipts.at("answers").at("404")) == 1u);
  BOOST_TEST(count(stats.at("requests").at("without_receipt")) == 1u);
  for (const auto& [webhook_id, posts] : by_webhook_id) {
    std::vector<int> statuses;
    for (const auto& post : posts)
      statuses.push_back(post.answered);
    if (posts.size() == 2)
      BOOST_TEST(statuses == (std::vector<int>{404, 200}));
    else
      BOOST_TEST(statuses == std::vector<int>{400});
  }
}

BOOST_AUTO_TEST_CASE(a_timed_out_send_is_known_to_status_queries) {
  receipt_receiver herald;
  auto opts = with_receipts(herald);
  opts.faults.timeout_rate = 1;
  opts.hold = std::chrono::milliseconds(50);
  running_provider provider(opts);
  for (int i = 0; i < 6; ++i)
    BOOST_CHECK_THROW(provider.call("/sms", "t-" + std::to_string(i), 1), std::exception);
  for (int i = 0; i < 6; ++i)
    BOOST_TEST(provider.status("t-" + std::to_string(i)) != "404"); // processed: found

  // Herald never saw the message id of a send whose answer was lost, so every receipt names
  // the request id.
  auto received = herald.wait_for(6);
  BOOST_REQUIRE_EQUAL(received.size(), 6u);
  for (const auto& r : received) {
    BOOST_TEST(r.request_id.rfind("t-", 0) == 0u);
    BOOST_TEST(r.message_id.empty());
  }

  auto refusing = options(false);
  refusing.faults.fail_rate = 1;
  running_provider unavailable(refusing);
  BOOST_TEST(unavailable.call("/sms", "u-1", 1).status == 503);
  BOOST_TEST(unavailable.status("u-1") == "404"); // never accepted
}

BOOST_AUTO_TEST_CASE(a_second_delivery_without_dedupe_is_counted_but_decided_once) {
  receipt_receiver herald;
  running_provider provider(with_receipts(herald));
  auto first = provider.call("/sms", "again", 1);
  auto second = provider.call("/sms", "again", 2);
  BOOST_TEST(provider_id(first) != provider_id(second));
  auto stats = wait_for_stats(provider, [](const json::object& s) {
    return count(s.at("requests").at("receipts_pending")) == 0;
  });
  BOOST_TEST(count(stats.at("calls").at("effective_deliveries")) == 2u);
  BOOST_TEST(count(stats.at("calls").at("duplicate_effective_deliveries")) == 1u);
  BOOST_TEST(count(stats.at("requests").at("accepted")) == 1u);
  BOOST_TEST(count(stats.at("receipts").at("planned")) == 1u);
  BOOST_TEST(count(stats.at("receipts").at("acknowledged")) == 1u);
  BOOST_TEST(herald.wait_for(1).size() == 1u);

  // A reset forgets the requests too.
  BOOST_TEST(test::request("127.0.0.1", provider.port(), "POST", "/calls/reset").status == 200);
  BOOST_TEST(provider.status("again") == "404");
}

BOOST_AUTO_TEST_SUITE_END()
