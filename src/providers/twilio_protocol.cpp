#include "providers/twilio_protocol.hpp"

#include "domain/receipt.hpp"
#include "providers/status_client.hpp"
#include "providers/webhook_signature.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace herald::providers {
namespace {

using namespace error_classes;

// The error codes (twilio.com/docs/api/errors/<code>) herald does not class by the HTTP status
// alone.
constexpr std::array<std::pair<std::int64_t, error_class>, 7> twilio_errors{{
    {20003, misconfigured}, // authentication failed: account SID or auth token
    {21601, misconfigured}, // From is not an SMS-capable number of this account
    {21606, misconfigured}, // From is not a valid, SMS-capable number of this account
    {21659, misconfigured}, // From is not a Twilio number
    {20429, slow_down},     // too many concurrent requests; not processed, safe to repeat
    {21611, slow_down},     // From's queue is full (10 hours of messages)
    {30001, try_again},     // queue overflow: not sent, send again later
}};

// Message statuses (Messages resource, "Message Status values") of outbound messages.
constexpr std::array<std::pair<std::string_view, provider_status>, 10> twilio_statuses{{
    {"queued", provider_status::accepted},
    {"accepted", provider_status::accepted},
    {"scheduled", provider_status::accepted},
    {"sending", provider_status::sent},
    {"sent", provider_status::sent},
    {"delivered", provider_status::delivered},
    {"read", provider_status::read},
    {"undelivered", provider_status::undelivered},
    {"failed", provider_status::undelivered},
    {"canceled", provider_status::undelivered},
}};

std::optional<provider_status> status_of(std::string_view twilio_status) {
  for (const auto& [text, status] : twilio_statuses)
    if (text == twilio_status)
      return status;
  return std::nullopt;
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  return (c >= 'a' && c <= 'f' ? c - 'a' : c - 'A') + 10;
}

bool is_messaging_service_sid(std::string_view sender) {
  return is_twilio_sid(sender, "MG");
}

bool is_error_code(std::string_view text) {
  return !text.empty() && text.size() <= 10 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::string> form_decode_component(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] != '%') {
      out.push_back(text[i]);
    } else if (i + 2 < text.size() && is_hex(text[i + 1]) && is_hex(text[i + 2])) {
      out.push_back(static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2])));
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

/// "failed", or "failed (twilio error 30001): Queue overflow" when Twilio names the error.
std::string undelivered_detail(std::string_view twilio_status, std::string_view error_code,
                               std::string_view error_message) {
  if (!is_error_code(error_code))
    return std::string{twilio_status};
  return failure_detail(std::string{twilio_status} + " (twilio error " + std::string{error_code} +
                            ")",
                        error_message);
}

status_answer unknown(std::string detail) {
  return {status_answer::kind::unknown, provider_status::accepted, {}, std::move(detail)};
}

} // namespace

std::string form_encode(const name_values& params) {
  std::string body;
  for (const auto& [name, value] : params) {
    if (!body.empty())
      body.push_back('&');
    body.append(escape_path_segment(name)).append(1, '=').append(escape_path_segment(value));
  }
  return body;
}

std::optional<name_values> form_decode(std::string_view body) {
  name_values params;
  while (!body.empty()) {
    const auto end = body.find('&');
    const auto pair = body.substr(0, end);
    body.remove_prefix(end == std::string_view::npos ? body.size() : end + 1);
    if (pair.empty())
      continue;
    const auto equals = pair.find('=');
    auto name = form_decode_component(pair.substr(0, equals));
    auto value = form_decode_component(equals == std::string_view::npos ? std::string_view{}
                                                                        : pair.substr(equals + 1));
    if (!name || !value)
      return std::nullopt;
    params.emplace_back(std::move(*name), std::move(*value));
  }
  return params;
}

std::string twilio_signature(std::string_view auth_token, std::string_view url,
                             const name_values& params) {
  auto sorted = params;
  std::sort(sorted.begin(), sorted.end());
  std::string content{url};
  for (const auto& [name, value] : sorted)
    content.append(name).append(value);
  return base64_encode(hmac_sha1(auth_token, content));
}

bool verify_twilio_signature(std::string_view auth_token, std::string_view url,
                             const name_values& params, std::string_view signature) {
  return same_signature(twilio_signature(auth_token, url, params), signature);
}

std::string message_create_body(const twilio_message& message) {
  name_values params{{"To", message.to}};
  params.emplace_back(is_messaging_service_sid(message.sender) ? "MessagingServiceSid" : "From",
                      message.sender);
  params.emplace_back("Body", message.body);
  if (!message.status_callback_url.empty())
    params.emplace_back("StatusCallback", message.status_callback_url);
  return form_encode(params);
}

classified_answer classify_twilio_answer(long http_status, std::string_view body,
                                         std::optional<std::chrono::milliseconds> retry_after) {
  const auto answer = parse_answer_object(body);
  if (http_status >= 200 && http_status <= 299)
    return {confirmed(answer ? string_field(*answer, "sid") : std::string_view{})};
  const auto code = answer ? integer_field(*answer, "code") : std::nullopt;
  if (!code)
    return {classify_unread_answer(http_status, retry_after, body)};
  const auto* how = find_error_class(twilio_errors, *code);
  // 401 is always the account's credentials, whatever code comes with it.
  const auto by_status = http_status == 401 ? misconfigured : class_of_status(http_status);
  return classify_as(how != nullptr ? *how : by_status,
                     failure_detail("twilio error " + std::to_string(*code) + " (HTTP " +
                                        std::to_string(http_status) + ")",
                                    string_field(*answer, "message")),
                     retry_after);
}

std::optional<twilio_status_update> parse_status_callback(const name_values& params) {
  const auto param = [&](std::string_view name) {
    for (const auto& [key, value] : params)
      if (key == name)
        return std::string_view{value};
    return std::string_view{};
  };
  const auto sid = param("MessageSid");
  const auto twilio_status = param("MessageStatus");
  const auto status = status_of(twilio_status);
  if (!domain::is_plausible_provider_id(sid) || !status)
    return std::nullopt;
  twilio_status_update update{std::string{sid}, *status, {}};
  if (*status == provider_status::undelivered)
    update.detail = undelivered_detail(twilio_status, param("ErrorCode"), {});
  return update;
}

status_answer parse_message_resource(long http_status, std::string_view body) {
  if (http_status == 404)
    return {
        status_answer::kind::not_found, provider_status::accepted, {}, "twilio: no such message"};
  if (http_status < 200 || http_status > 299)
    return unknown("twilio message query answered HTTP " + std::to_string(http_status));
  const auto answer = parse_answer_object(body);
  if (!answer)
    return unknown("twilio message answer unreadable");
  const auto sid = string_field(*answer, "sid");
  const auto twilio_status = string_field(*answer, "status");
  const auto status = status_of(twilio_status);
  if (!domain::is_plausible_provider_id(sid) || !status)
    return unknown("twilio message answer names no known status");
  status_answer found{status_answer::kind::found, *status, std::string{sid}, {}};
  if (*status == provider_status::undelivered) {
    const auto code = integer_field(*answer, "error_code");
    found.detail = undelivered_detail(twilio_status, code ? std::to_string(*code) : std::string{},
                                      string_field(*answer, "error_message"));
  }
  return found;
}

bool is_twilio_sid(std::string_view text, std::string_view prefix) {
  return text.size() == 34 && text.substr(0, 2) == prefix &&
         std::all_of(text.begin() + 2, text.end(), is_hex);
}

} // namespace herald::providers
