#include "providers/push_protocol.hpp"

#include <array>

#include <boost/json.hpp>

namespace herald::providers {
namespace {

namespace json = boost::json;
using namespace error_classes;

// FCM's error codes (reference/fcm/rest/v1/ErrorCode) and the google.rpc statuses FCM answers
// without one.
constexpr std::array<std::pair<std::string_view, error_class>, 9> fcm_errors{{
    {"UNREGISTERED", refused},                 // the token is no longer valid
    {"INVALID_ARGUMENT", refused},             // a bad token or message field
    {"SENDER_ID_MISMATCH", misconfigured},     // the token belongs to another sender
    {"THIRD_PARTY_AUTH_ERROR", misconfigured}, // the APNs certificate or web push key
    {"PERMISSION_DENIED", misconfigured},      // the service account may not send
    {"UNAUTHENTICATED", token_refused},        // the OAuth 2.0 access token
    {"QUOTA_EXCEEDED", slow_down},             // sending limit exceeded
    {"UNAVAILABLE", try_again},                // overloaded: retry, honouring Retry-After
    {"INTERNAL", try_again},                   // unknown internal error: retry
}};

constexpr std::string_view fcm_error_type = "type.googleapis.com/google.firebase.fcm.v1.FcmError";

// APNs's reasons ("Handling notification responses from APNs").
constexpr std::array<std::pair<std::string_view, error_class>, 20> apns_errors{{
    {"BadDeviceToken", refused},
    {"DeviceTokenNotForTopic", refused},
    {"Unregistered", refused}, // the token is inactive for the topic
    {"ExpiredToken", refused},
    {"PayloadTooLarge", refused},
    {"BadTopic", misconfigured},
    {"TopicDisallowed", misconfigured},
    {"MissingTopic", misconfigured},
    {"BadCertificate", misconfigured},
    {"BadCertificateEnvironment", misconfigured},
    {"Forbidden", misconfigured},
    {"MissingProviderToken", misconfigured},
    {"ExpiredProviderToken", token_refused}, // the JWT is stale: generate a new one
    {"InvalidProviderToken", token_refused},
    {"TooManyProviderTokenUpdates", slow_down}, // the JWT was replaced too often
    {"TooManyRequests", try_again},             // too many for the same device token
    {"IdleTimeout", try_again},                 // the connection, not the request
    {"InternalServerError", try_again},
    {"ServiceUnavailable", try_again},
    {"Shutdown", try_again}, // the server is shutting down
}};

/// The FcmError's errorCode in error.details, or error.status.
std::string_view fcm_error_code(const json::object& error) {
  if (const auto* details = error.if_contains("details"); details != nullptr && details->is_array())
    for (const auto& detail : details->get_array())
      if (detail.is_object() && string_field(detail.get_object(), "@type") == fcm_error_type)
        if (const auto code = string_field(detail.get_object(), "errorCode"); !code.empty())
          return code;
  return string_field(error, "status");
}

std::string with_status(std::string_view what, long http_status) {
  return std::string{what} + " (HTTP " + std::to_string(http_status) + ")";
}

} // namespace

std::string fcm_send_body(std::string_view token, std::string_view title, std::string_view body,
                          const name_values& data) {
  json::object message;
  message["token"] = token;
  message["notification"] = json::object{{"title", title}, {"body", body}};
  if (!data.empty()) {
    json::object values;
    for (const auto& [key, value] : data)
      values[key] = value;
    message["data"] = std::move(values);
  }
  return json::serialize(json::object{{"message", std::move(message)}});
}

classified_answer classify_fcm_answer(long http_status, std::string_view body,
                                      std::optional<std::chrono::milliseconds> retry_after) {
  const auto answer = parse_answer_object(body);
  if (http_status >= 200 && http_status <= 299)
    return {confirmed(answer ? string_field(*answer, "name") : std::string_view{})};
  const auto* error = answer ? answer->if_contains("error") : nullptr;
  const auto code =
      error != nullptr && error->is_object() ? fcm_error_code(error->get_object()) : "";
  if (code.empty())
    return {classify_unread_answer(http_status, retry_after, body)};
  const auto* how = find_error_class(fcm_errors, code);
  return classify_as(how != nullptr ? *how : class_of_status(http_status),
                     failure_detail(with_status("fcm " + std::string{code}, http_status),
                                    string_field(error->get_object(), "message")),
                     retry_after);
}

token_answer parse_oauth_token_answer(std::string_view body) {
  const auto answer = parse_answer_object(body);
  if (!answer)
    return {{}, {}, "oauth token answer unreadable"};
  if (const auto error = string_field(*answer, "error"); !error.empty())
    return {{},
            {},
            failure_detail("oauth error " + std::string{error},
                           string_field(*answer, "error_description"))};
  return read_access_token(*answer);
}

std::string apns_payload(std::string_view title, std::string_view body) {
  return json::serialize(json::object{
      {"aps", json::object{{"alert", json::object{{"title", title}, {"body", body}}}}}});
}

classified_answer classify_apns_answer(long http_status, std::string_view body,
                                       std::optional<std::chrono::milliseconds> retry_after,
                                       std::string_view apns_id) {
  if (http_status >= 200 && http_status <= 299)
    return {confirmed(apns_id)};
  const auto answer = parse_answer_object(body);
  const auto reason = answer ? string_field(*answer, "reason") : std::string_view{};
  if (reason.empty())
    return {classify_unread_answer(http_status, retry_after, body)};
  // With Unregistered, since when APNs knows the token inactive: a token the device registers
  // later is good again, so the time belongs in the detail.
  const auto since = integer_field(*answer, "timestamp");
  const auto inactive_since =
      since ? unix_instant(std::chrono::milliseconds{*since}) : std::nullopt;
  const auto* how = find_error_class(apns_errors, reason);
  return classify_as(
      how != nullptr ? *how : class_of_status(http_status),
      failure_detail(with_status("apns " + std::string{reason}, http_status),
                     inactive_since ? "inactive since " + domain::format_rfc3339(*inactive_since)
                                    : std::string{}),
      retry_after);
}

} // namespace herald::providers
