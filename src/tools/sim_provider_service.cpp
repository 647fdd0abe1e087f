#include "tools/sim_provider_service.hpp"

#include "tools/sim_provider_receipts.hpp"

#include <cctype>
#include <mutex>
#include <optional>
#include <random>
#include <string_view>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace herald::tools {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

constexpr std::string_view control_prefix = "/calls/";
constexpr std::string_view status_prefix = "/status/";
/// Mixed into the seed of the receipt draws, so adding receipts never changes the fault draws
/// of a seed.
constexpr std::uint64_t receipt_seed_salt = 0x9e3779b97f4a7c15ULL;
constexpr std::size_t default_recent = 100;
constexpr std::size_t max_recent = 10000;

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i] == '+' ? ' ' : text[i]);
    }
  }
  return out;
}

/// The decoded value of `name` in a query string, if present.
std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == name)
      return percent_decode(eq == std::string_view::npos ? std::string_view()
                                                         : pair.substr(eq + 1));
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

api::http_response json_response(http::status status, std::string body) {
  api::http_response response{status, 11};
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
  return response;
}

api::http_response error_response(http::status status, std::string_view code) {
  return json_response(status, json::serialize(json::object{{"error", code}}));
}

std::string entries_json(const std::vector<call_entry>& entries) {
  json::array items;
  items.reserve(entries.size());
  for (const auto& entry : entries) {
    auto at_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(entry.at.time_since_epoch()).count();
    items.push_back(json::object{{"endpoint", entry.endpoint},
                                 {"id", entry.request_id},
                                 {"attempt", entry.attempt},
                                 {"at_ms", at_ms},
                                 {"outcome", to_string(entry.outcome)},
                                 {"effective", entry.effective},
                                 {"deduplicated", entry.deduplicated},
                                 {"provider_message_id", entry.provider_message_id}});
  }
  return json::serialize(json::object{{"calls", std::move(items)}});
}

/// data.channel of a herald.message webhook payload; "" when absent or not JSON.
std::string payload_channel(std::string_view body) {
  boost::system::error_code ec;
  auto value = json::parse(body, ec);
  if (ec || !value.is_object())
    return {};
  auto* data = value.get_object().if_contains("data");
  if (!data || !data->is_object())
    return {};
  auto* channel = data->get_object().if_contains("channel");
  return channel && channel->is_string() ? std::string(channel->get_string()) : std::string();
}

} // namespace

struct sim_provider_service::impl {
  explicit impl(const sim_provider_options& opts)
      : options(opts), calls(opts.dedupe_by_id, 1'000'000, message_id_prefix()), random(opts.seed),
        receipt_random(opts.seed ^ receipt_seed_salt), work(asio::make_work_guard(timers)) {
    if (options.receipts.to)
      receipts = std::make_unique<receipt_sender>(options.receipts,
                                                  [this](const std::string& id, bool acknowledged) {
                                                    book.receipt_finished(id, acknowledged);
                                                  });
    timer_thread = std::thread([this] { timers.run(); });
  }

  /// "sim-<start time>-": message ids stay unique when the provider restarts against the same
  /// herald database.
  static std::string message_id_prefix() {
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    return "sim-" + std::to_string(now) + "-";
  }

  void handle(api::http_request request, api::respond_fn respond) {
    std::string_view target = request.target();
    auto question = target.find('?');
    std::string_view path = target.substr(0, question);
    std::string_view query =
        question == std::string_view::npos ? std::string_view() : target.substr(question + 1);

    if (path == "/healthz")
      return respond(json_response(http::status::ok, R"({"status":"ok"})"));
    if (path.substr(0, status_prefix.size()) == status_prefix &&
        request.method() == http::verb::get)
      return answer_status_query(percent_decode(path.substr(status_prefix.size())),
                                 std::move(respond));
    if (path == "/stats" && request.method() == http::verb::get)
      return respond(json_response(http::status::ok, stats_json()));
    if (path.substr(0, control_prefix.size()) == control_prefix)
      return control(request.method(), path, query, respond);
    if (request.method() != http::verb::post)
      return respond(error_response(http::status::method_not_allowed, "method_not_allowed"));
    provider_call(request, std::string(path), std::move(respond));
  }

  void control(http::verb method, std::string_view path, std::string_view query,
               const api::respond_fn& respond) {
    if (path == "/calls/summary" && method == http::verb::get)
      return respond(json_response(http::status::ok, to_json(calls.summary())));
    if (path == "/calls/ids" && method == http::verb::get) {
      auto endpoint = query_param(query, "endpoint");
      json::array ids;
      for (auto& id : calls.delivered_ids(endpoint))
        ids.emplace_back(id);
      json::object body{{"count", ids.size()}, {"ids", std::move(ids)}};
      if (endpoint)
        body["endpoint"] = *endpoint;
      return respond(json_response(http::status::ok, json::serialize(body)));
    }
    if (path == "/calls/recent" && method == http::verb::get) {
      std::size_t limit = default_recent;
      if (auto text = query_param(query, "limit")) {
        try {
          limit = std::min<std::size_t>(std::stoul(*text), max_recent);
        } catch (const std::exception&) {
          return respond(error_response(http::status::bad_request, "bad_limit"));
        }
      }
      return respond(json_response(http::status::ok, entries_json(calls.recent(limit))));
    }
    if (path == "/calls/reset" && method == http::verb::post) {
      calls.reset();
      book.reset();
      if (receipts)
        receipts->reset();
      return respond(json_response(http::status::ok, R"({"reset":true})"));
    }
    return respond(error_response(http::status::not_found, "not_found"));
  }

  void provider_call(const api::http_request& request, std::string endpoint,
                     api::respond_fn respond) {
    std::string id(request["webhook-id"]);
    if (id.empty())
      id = std::string(request["Idempotency-Key"]);
    std::string attempt(request["X-Herald-Attempt"]);
    call_outcome outcome;
    {
      std::lock_guard<std::mutex> lock(random_mutex);
      outcome = options.faults.choose(std::uniform_real_distribution<double>(0.0, 1.0)(random));
    }
    auto now = std::chrono::system_clock::now();
    auto decision = calls.record(endpoint, id, attempt, outcome, now);
    if (is_processed(outcome) && !id.empty() && !book.contains(id))
      decide_fate(id, decision.provider_message_id, outcome == call_outcome::success,
                  payload_channel(request.body()), now);

    if (outcome == call_outcome::timeout) {
      // Processed, answer lost: keep the responder without calling it; dropping it later
      // closes the connection.
      return after(options.hold, [respond = std::move(respond)] { (void)respond; });
    }
    api::http_response response;
    switch (outcome) {
    case call_outcome::retryable:
      response = error_response(http::status::service_unavailable, "unavailable");
      break;
    case call_outcome::permanent:
      response = error_response(http::status::bad_request, "rejected");
      break;
    default:
      response = json_response(
          http::status::ok,
          json::serialize(json::object{{"message_id", decision.provider_message_id}}));
      if (decision.deduplicated)
        response.set("X-Sim-Deduplicated", "true");
      break;
    }
    if (options.latency.count() == 0)
      return respond(std::move(response));
    after(options.latency,
          [respond = std::move(respond), response = std::move(response)]() mutable {
            respond(std::move(response));
          });
  }

  /// Decides, once per provider request id (its first processed call), what happened to the
  /// message and queues its receipts. A later delivery of the same id without --dedupe-by-id
  /// is counted by the call record but gets no receipts of its own.
  void decide_fate(const std::string& id, const std::string& message_id, bool answer_sent,
                   const std::string& channel, std::chrono::system_clock::time_point now) {
    receipt_plan plan;
    {
      std::lock_guard<std::mutex> lock(random_mutex);
      plan = plan_receipts(options.receipts, answer_sent, receipt_random);
    }
    const bool posting = receipts && !channel.empty();
    delivery_truth truth;
    truth.accepted_at = now;
    truth.message_id = message_id;
    truth.outcome = plan.outcome;
    truth.outcome_at = now + plan.outcome_after;
    if (plan.read)
      truth.read_at = now + plan.read_after;
    truth.receipts_outstanding = posting ? static_cast<unsigned>(plan.copies.size()) : 0;
    if (!book.add(id, std::move(truth)) || !posting)
      return; // a concurrent call of the same id decided first
    receipts->submit(plan, channel, id, message_id, std::chrono::steady_clock::now(), now);
  }

  // The truth about `id`, after the status latency: the book is read when the answer goes, so
  // a slow answer is no staler than a fast one.
  void answer_status_query(std::string id, api::respond_fn respond) {
    if (options.status_latency.count() == 0)
      return respond(status_query(id));
    after(options.status_latency,
          [this, id = std::move(id), respond = std::move(respond)]() mutable {
            respond(status_query(id));
          });
  }

  api::http_response status_query(const std::string& id) {
    auto status = book.status_of(id, std::chrono::system_clock::now());
    if (!status)
      return error_response(http::status::not_found, "unknown_request_id");
    return json_response(http::status::ok, json::serialize(json::object{{"status", *status}}));
  }

  std::string stats_json() {
    auto tally = book.tally(std::chrono::system_clock::now());
    json::object statuses;
    for (const auto& [status, n] : tally.statuses)
      statuses[status] = n;
    json::object body{{"calls", json::parse(to_json(calls.summary()))},
                      {"requests", json::object{{"accepted", tally.requests},
                                                {"without_receipt", tally.without_receipt},
                                                {"receipts_pending", tally.receipts_pending},
                                                {"statuses", std::move(statuses)}}}};
    body["receipts"] = receipts ? json::parse(to_json(receipts->counts())) : json::value(nullptr);
    return json::serialize(body);
  }

  /// Runs `action` on the timer thread after `delay`; dropped unrun on shutdown.
  template <typename Action> void after(std::chrono::milliseconds delay, Action action) {
    auto timer = std::make_shared<asio::steady_timer>(timers, delay);
    timer->async_wait(
        [timer, action = std::move(action)](const boost::system::error_code& ec) mutable {
          if (!ec)
            action();
        });
  }

  void shutdown() {
    std::lock_guard<std::mutex> lock(shutdown_mutex);
    if (stopped)
      return;
    stopped = true;
    if (receipts)
      receipts->shutdown();
    work.reset();
    timers.stop();
    if (timer_thread.joinable())
      timer_thread.join();
  }

  sim_provider_options options;
  call_record calls;
  std::mutex random_mutex;
  std::mt19937_64 random;
  std::mt19937_64 receipt_random;
  delivery_book book;
  std::unique_ptr<receipt_sender> receipts; ///< null without --receipt-to
  asio::io_context timers;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread timer_thread;
  std::mutex shutdown_mutex;
  bool stopped = false;
};

sim_provider_service::sim_provider_service(const sim_provider_options& options)
    : impl_(std::make_unique<impl>(options)) {}

sim_provider_service::~sim_provider_service() {
  impl_->shutdown();
}

api::request_handler sim_provider_service::handler() {
  return [this](api::http_request request, api::respond_fn respond) {
    impl_->handle(std::move(request), std::move(respond));
  };
}

const call_record& sim_provider_service::calls() const {
  return impl_->calls;
}

std::string sim_provider_service::stats() const {
  return impl_->stats_json();
}

void sim_provider_service::shutdown() {
  impl_->shutdown();
}

} // namespace herald::tools
