#include "providers/status_client.hpp"

#include "domain/masking.hpp"
#include "providers/webhook_provider.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <boost/json.hpp>
#include <curl/curl.h>

namespace herald::providers {
namespace {

/// A status answer is a small JSON object; anything longer is not one.
constexpr std::size_t max_answer_bytes = 4096;

status_answer unknown(std::string detail) {
  return {status_answer::kind::unknown, provider_status::accepted, {}, std::move(detail)};
}

} // namespace

status_answer classify_status_answer(int code, long http_status, std::string_view body,
                                     std::string_view error_text) {
  if (code != CURLE_OK && http_status < 200)
    return unknown(
        "status query failed: " + std::string{curl_easy_strerror(static_cast<CURLcode>(code))} +
        (error_text.empty() ? "" : ": " + domain::mask_free_text(error_text)));
  if (http_status == 404)
    return {status_answer::kind::not_found, provider_status::accepted, {}, "404"};
  if (http_status < 200 || http_status > 299)
    return unknown("status query answered HTTP " + std::to_string(http_status));
  if (code != CURLE_OK || body.size() > max_answer_bytes)
    return unknown("status query answer cut off");
  boost::system::error_code ec;
  const auto value = boost::json::parse(body, ec);
  const auto* status = !ec && value.is_object() ? value.as_object().if_contains("status") : nullptr;
  const auto parsed = status != nullptr && status->is_string()
                          ? parse_provider_status(std::string_view{status->as_string()})
                          : std::nullopt;
  if (!parsed)
    return unknown("status query answer names no known status");
  return {status_answer::kind::found, *parsed, message_id_in(body), {}};
}

status_client::status_client(status_client_config config)
    : client_(http_client_options{std::max<std::size_t>(config.max_connections, 1),
                                  max_answer_bytes + 1, "herald-webhook/1"}) {
  // Also makes libcurl's global state ready.
  if (auto problem = http_url_problem(config.status_url, "status_url"); !problem.empty())
    throw std::invalid_argument(problem);
  timeout_ = config.timeout;
  base_ = without_trailing_slash(std::move(config.status_url));
}

void status_client::query(const provider_status_query& query, status_callback done) {
  if (!done)
    return;
  outbound_call call;
  call.method = "GET";
  call.url = base_ + "/" + escape_path_segment(query.provider_request_id);
  call.timeout = timeout_;
  client_.call(std::move(call), [done = std::move(done)](outbound_answer answer) {
    done(answer.stopped
             ? unknown("status client stopped")
             : classify_status_answer(answer.code, answer.status, answer.body, answer.error));
  });
}

} // namespace herald::providers
