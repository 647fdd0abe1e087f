#pragma once

#include "providers/http_client.hpp"
#include "providers/provider.hpp"

#include <chrono>
#include <optional>
#include <string_view>

#include <curl/curl.h>

namespace herald::providers {

/// Pure classification of what an HTTP provider answered (or failed to answer) into a
/// provider_result. No I/O, no clock: "now" is passed in where a date must be read.
///
///   2xx            success
///   408, 5xx       retryable  (Retry-After honoured)
///   429            throttled  (Retry-After honoured; the channel pauses)
///   410            permanent  "endpoint gone (410): disabled"
///   other 4xx      permanent
///   3xx            permanent  (redirects are never followed)
///   anything else  permanent  (not a final HTTP status)

/// The longest pause a Retry-After can ask for; larger values are cut to it, so a broken or
/// hostile endpoint cannot park a channel for ever.
inline constexpr std::chrono::milliseconds max_retry_after = std::chrono::hours{24};

/// Longest excerpt of a response body copied into a failure's detail.
inline constexpr std::size_t max_body_excerpt = 200;

/// Classifies a complete HTTP answer. `retry_after` is kept only for retryable and throttled
/// answers; `body` goes into the detail of failures masked (domain::mask_free_text) and then
/// cut to max_body_excerpt.
provider_result classify_http(long status, std::optional<std::chrono::milliseconds> retry_after,
                              std::string_view body);

/// Classifies a transfer that ended without a complete HTTP answer:
///   - the request never (fully) reached the endpoint — resolve, connect, TLS handshake, send
///     errors — is retryable: nothing can have been processed;
///   - a timeout, or a failure after the request was sent (receive error, reset, empty or
///     cut answer), is timeout: the endpoint may have processed it, the outcome is unknown;
///   - a URL or protocol curl cannot use is permanent (configuration);
///   - any other code is timeout: not knowing, herald must assume it may have been delivered.
/// `error_text` (curl's error buffer, may be empty) is appended to the detail.
provider_result classify_transport(CURLcode code, std::string_view error_text = {});

/// Classifies how an http_client call ended: a stopped client is timeout ("adapter stopped":
/// the call may have arrived), a final HTTP status goes to classify_http() with its Retry-After
/// read against the system clock, anything else to classify_transport() (the error text masked).
provider_result classify_outbound(const outbound_answer& answer);

/// Whether a provider's answer is there to classify by its protocol: the transfer completed,
/// or a 2xx head came before it broke off (the provider took the call: for FCM and APNs, whose
/// status says so, only details such as the message id are lost, and sending again would send
/// twice). An answer that broke off after any other status lost the reason that decides its
/// class (APNs's 403 is a stale token or a wrong certificate): classify_unanswered.
bool provider_answered(const outbound_answer& answer);

/// How a call ended that brought no HTTP answer to classify (curl's result alone): only curl's
/// generic text for the code is kept, because the URL may carry a token or a secret and curl's
/// error text may quote it. A stopped client is classify_outbound's timeout.
provider_result classify_unanswered(const outbound_answer& answer);

/// The answer's Retry-After, read against the system clock; nullopt when absent or malformed.
std::optional<std::chrono::milliseconds> retry_after_of(const outbound_answer& answer);

/// Parses a Retry-After header value (RFC 7231 §7.1.3): delta-seconds, or an IMF-fixdate
/// ("Sun, 06 Nov 1994 08:49:37 GMT") read relative to `now` (a date in the past is 0 ms).
/// nullopt when malformed. Results are capped at max_retry_after.
std::optional<std::chrono::milliseconds>
parse_retry_after(std::string_view value, std::chrono::system_clock::time_point now);

} // namespace herald::providers
