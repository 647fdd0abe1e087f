#include "providers/webhook_provider.hpp"

#include "domain/receipt.hpp"
#include "domain/time.hpp"
#include "providers/webhook_signature.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <boost/json.hpp>

namespace herald::providers {
namespace {

namespace json = boost::json;

/// The poster of a checked config; throws std::invalid_argument when it is refused.
poster_config poster_of(const webhook_config& config) {
  if (auto problem = config.validate(); !problem.empty())
    throw std::invalid_argument(problem);
  return {config.url, *decode_webhook_secret(config.secret), config.timeout, config.max_connections,
          "herald-webhook/1"};
}

} // namespace

std::string message_id_in(std::string_view body) {
  boost::system::error_code ec;
  auto value = json::parse(body, ec);
  if (ec || !value.is_object())
    return {};
  auto* id = value.as_object().if_contains("message_id");
  if (id == nullptr || !id->is_string())
    return {};
  std::string text{id->as_string()};
  return domain::is_plausible_provider_id(text) ? text : std::string{};
}

std::string webhook_config::validate() const {
  if (auto problem = http_url_problem(url, "webhook url"); !problem.empty())
    return problem;
  if (!status_url.empty())
    if (auto problem = http_url_problem(status_url, "status_url"); !problem.empty())
      return problem;
  if (!receipt_secret.empty() && !decode_webhook_secret(receipt_secret))
    return "receipt_secret must be \"whsec_\" followed by base64";
  if (!decode_webhook_secret(secret))
    return "webhook secret must be \"whsec_\" followed by base64";
  if (timeout.count() <= 0)
    return "webhook timeout must be positive";
  if (max_connections == 0)
    return "webhook max_connections must be at least 1";
  return {};
}

std::string webhook_payload(const provider_request& request, std::int64_t unix_seconds) {
  json::object data;
  data["task_id"] = request.task_id;
  data["channel"] = request.channel;
  data["recipient"] = request.recipient;
  data["title"] = request.title;
  data["body"] = request.body;
  data["trace_id"] = request.trace_id;
  data["attempt"] = request.attempt;
  json::object message;
  message["type"] = "herald.message";
  message["timestamp"] = domain::format_rfc3339(
      std::chrono::system_clock::time_point{std::chrono::seconds{unix_seconds}});
  message["data"] = std::move(data);
  return json::serialize(message);
}

webhook_provider::webhook_provider(webhook_config config,
                                   std::function<std::int64_t()> unix_seconds)
    : poster_(poster_of(config), std::move(unix_seconds)) {
  if (!config.status_url.empty())
    status_ = std::make_unique<status_client>(
        status_client_config{config.status_url, config.timeout, config.max_connections});
}

webhook_provider::~webhook_provider() = default;

bool webhook_provider::can_query_status() const {
  return status_ != nullptr;
}

void webhook_provider::query_status(provider_status_query query, status_callback done) {
  if (status_)
    status_->query(query, std::move(done));
  else
    provider_adapter::query_status(std::move(query), std::move(done));
}

void webhook_provider::send(provider_request request, provider_callback done) {
  if (!done)
    return; // nobody to answer; do not call the endpoint for nothing
  signed_post post;
  post.id = request.provider_request_id;
  post.headers = {"Idempotency-Key: " + request.provider_request_id,
                  "X-Herald-Attempt: " + std::to_string(request.attempt)};
  post.body = [request](std::int64_t now) { return webhook_payload(request, now); };
  poster_.post(std::move(post),
               [id = request.provider_request_id, done = std::move(done)](post_answer answer) {
                 if (answer.result.outcome == call_outcome::success) {
                   // The id the endpoint knows the message by: its own if it named one.
                   auto own_id = message_id_in(answer.response_excerpt);
                   answer.result.detail = own_id.empty() ? id : std::move(own_id);
                 }
                 done(std::move(answer.result));
               });
}

} // namespace herald::providers
