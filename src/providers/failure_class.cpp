#include "providers/failure_class.hpp"

#include "domain/masking.hpp"
#include "domain/time.hpp"

#include <array>
#include <string>

namespace herald::providers {
namespace {

/// The body masked whole, then cut: cutting first would leave the start of a number or key
/// that masking no longer recognises ("sk_live_51Hx").
std::string http_detail(std::string_view what, long status, std::string_view body) {
  std::string detail{what};
  detail += " (" + std::to_string(status) + ")";
  if (!body.empty())
    detail += ": " + domain::mask_free_text(body, max_body_excerpt);
  return detail;
}

std::string transport_detail(std::string_view what, CURLcode code, std::string_view error_text) {
  std::string detail{what};
  detail += " (curl ";
  detail += std::to_string(static_cast<int>(code));
  detail += ": ";
  detail += error_text.empty() ? std::string_view{curl_easy_strerror(code)} : error_text;
  detail += ")";
  return detail;
}

bool all_digits(std::string_view text) {
  if (text.empty())
    return false;
  for (char c : text)
    if (c < '0' || c > '9')
      return false;
  return true;
}

/// "Sun, 06 Nov 1994 08:49:37 GMT" -> its instant; the calendar checks are parse_rfc3339's.
std::optional<std::chrono::system_clock::time_point> parse_imf_fixdate(std::string_view text) {
  static constexpr std::array<std::string_view, 7> days = {"Mon", "Tue", "Wed", "Thu",
                                                           "Fri", "Sat", "Sun"};
  static constexpr std::array<std::string_view, 12> months = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // 0123456789012345678901234567890
  // Sun, 06 Nov 1994 08:49:37 GMT
  if (text.size() != 29 || text.substr(3, 2) != ", " || text[7] != ' ' || text[11] != ' ' ||
      text[16] != ' ' || text.substr(25) != " GMT")
    return std::nullopt;
  bool known_day = false;
  for (auto day : days)
    known_day = known_day || text.substr(0, 3) == day;
  if (!known_day)
    return std::nullopt;
  int month = 0;
  for (std::size_t i = 0; i < months.size(); ++i)
    if (text.substr(8, 3) == months[i])
      month = static_cast<int>(i) + 1;
  if (month == 0 || !all_digits(text.substr(5, 2)) || !all_digits(text.substr(12, 4)))
    return std::nullopt;
  const auto time = text.substr(17, 8); // hh:mm:ss, checked by parse_rfc3339
  std::string rfc3339;
  rfc3339.append(text.substr(12, 4)).append(1, '-');
  rfc3339.append(1, static_cast<char>('0' + month / 10))
      .append(1, static_cast<char>('0' + month % 10));
  rfc3339.append(1, '-').append(text.substr(5, 2)).append(1, 'T').append(time).append(1, 'Z');
  return domain::parse_rfc3339(rfc3339);
}

} // namespace

provider_result classify_http(long status, std::optional<std::chrono::milliseconds> retry_after,
                              std::string_view body) {
  if (status >= 200 && status <= 299)
    return {call_outcome::success, "HTTP " + std::to_string(status), std::nullopt};
  if (status == 408 || (status >= 500 && status <= 599))
    return {call_outcome::retryable, http_detail("endpoint unavailable", status, body),
            retry_after};
  if (status == 429)
    return {call_outcome::throttled, http_detail("endpoint throttling", status, body), retry_after};
  if (status == 410)
    return {call_outcome::permanent, "endpoint gone (410): disabled", std::nullopt};
  if (status >= 400 && status <= 499)
    return {call_outcome::permanent, http_detail("endpoint refused", status, body), std::nullopt};
  if (status >= 300 && status <= 399)
    return {call_outcome::permanent, http_detail("redirect not followed", status, {}),
            std::nullopt};
  return {call_outcome::permanent, http_detail("unexpected HTTP status", status, body),
          std::nullopt};
}

provider_result classify_transport(CURLcode code, std::string_view error_text) {
  switch (code) {
  case CURLE_OK:
    // Not a transport failure; callers classify the HTTP status instead. Seen here, nothing
    // is known about the answer.
    return {call_outcome::timeout, transport_detail("no HTTP answer", code, error_text),
            std::nullopt};
  case CURLE_OPERATION_TIMEDOUT:
    return {call_outcome::timeout, transport_detail("timed out, outcome unknown", code, error_text),
            std::nullopt};
  // The request cannot have reached the endpoint: safe to send again.
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_CONNECT:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_OUT_OF_MEMORY:
  case CURLE_INTERFACE_FAILED:
  case CURLE_FAILED_INIT: // http_client: the call was never handed to curl
    return {call_outcome::retryable, transport_detail("not delivered", code, error_text),
            std::nullopt};
  // The request went out; whether it was processed is unknown.
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_WEIRD_SERVER_REPLY:
    return {call_outcome::timeout,
            transport_detail("connection lost after sending, outcome unknown", code, error_text),
            std::nullopt};
  // Configuration: no retry will change these.
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
    return {call_outcome::permanent, transport_detail("unusable endpoint URL", code, error_text),
            std::nullopt};
  default:
    return {call_outcome::timeout,
            transport_detail("transfer failed, outcome unknown", code, error_text), std::nullopt};
  }
}

std::optional<std::chrono::milliseconds>
parse_retry_after(std::string_view value, std::chrono::system_clock::time_point now) {
  value = trim_http_whitespace(value);
  if (all_digits(value)) {
    // More digits than any sane pause: cap instead of overflowing.
    if (value.size() > 9)
      return max_retry_after;
    const auto seconds = std::chrono::seconds{std::stoll(std::string{value})};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(seconds);
    return wait < max_retry_after ? wait : max_retry_after;
  }
  const auto at = parse_imf_fixdate(value);
  if (!at)
    return std::nullopt;
  if (*at <= now)
    return std::chrono::milliseconds{0};
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*at - now);
  return wait < max_retry_after ? wait : max_retry_after;
}

std::optional<std::chrono::milliseconds> retry_after_of(const outbound_answer& answer) {
  const auto header = answer.header("retry-after");
  return header ? parse_retry_after(*header, std::chrono::system_clock::now()) : std::nullopt;
}

bool provider_answered(const outbound_answer& answer) {
  return !answer.stopped &&
         (answer.code == CURLE_OK || (answer.status >= 200 && answer.status <= 299));
}

provider_result classify_unanswered(const outbound_answer& answer) {
  if (answer.stopped)
    return classify_outbound(answer);
  return classify_transport(static_cast<CURLcode>(answer.code));
}

provider_result classify_outbound(const outbound_answer& answer) {
  if (answer.stopped)
    return {call_outcome::timeout, "adapter stopped", std::nullopt};
  // A final status seen means the endpoint decided, even if the rest of the answer was lost.
  if (answer.code == CURLE_OK || answer.status >= 200)
    return classify_http(answer.status, retry_after_of(answer), answer.body);
  // curl may quote the URL
  return classify_transport(static_cast<CURLcode>(answer.code),
                            domain::mask_free_text(answer.error));
}

} // namespace herald::providers
