#pragma once

#include "providers/answer_class.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace herald::providers {

/// Twilio Programmable Messaging, the wire format only (pure). Sources (twilio.com/docs):
/// "Messages resource" (POST /2010-04-01/Accounts/{AccountSid}/Messages.json, form-encoded;
/// the Message JSON), "Twilio API responses" (error JSON {"code", "message", "more_info",
/// "status"}), the error and warning dictionary (/docs/api/errors/<code>), "Outbound message
/// status in status callbacks" and "Webhooks security" (X-Twilio-Signature).

/// An application/x-www-form-urlencoded body: name=value pairs joined by '&', every byte but
/// the RFC 3986 unreserved ones percent-encoded (escape_path_segment), a space as %20. The
/// WHATWG URL Standard's serializer writes a space as '+'; its parser (§5.1), like every form
/// parser, reads both, and herald keeps a single percent-encoder.
std::string form_encode(const name_values& params);

/// A form body read back (WHATWG URL Standard §5.1): pairs split at '&' (empty ones skipped),
/// name and value at the first '=', '+' read as a space, %XX decoded; order and duplicates
/// kept. nullopt when a '%' is not followed by two hex digits.
std::optional<name_values> form_decode(std::string_view body);

/// The X-Twilio-Signature of a request Twilio sent to `url` (the full URL as configured with
/// Twilio, query included) with POST `params`: base64(HMAC-SHA1(auth_token, url followed by
/// every parameter's name and value, sorted by name in byte order, equal names by value)).
std::string twilio_signature(std::string_view auth_token, std::string_view url,
                             const name_values& params);

/// Whether `signature` is the signature of this request, compared in constant time.
bool verify_twilio_signature(std::string_view auth_token, std::string_view url,
                             const name_values& params, std::string_view signature);

/// Whether `text` is a Twilio SID of the kind `prefix` names ("AC" account, "SM"/"MM"
/// message, "MG" messaging service): the prefix and 32 hex digits.
bool is_twilio_sid(std::string_view text, std::string_view prefix);

/// One outbound message.
struct twilio_message {
  /// A Messaging Service SID ("MG" and 32 hex digits), sent as MessagingServiceSid; anything
  /// else is the sender's number or id, sent as From.
  std::string sender;
  std::string to; ///< E.164 number, or "whatsapp:+…"
  std::string body;
  std::string status_callback_url; ///< where Twilio reports status changes; empty for none
};

/// The form body of POST …/Messages.json: To, From or MessagingServiceSid, Body and
/// StatusCallback (left out when empty), in that order.
std::string message_create_body(const twilio_message& message);

/// Classes Twilio's answer to a create. Twilio answers 201 Created with the Message JSON, and
/// an error with {"code": N, "message": "…"} and an HTTP status:
///   2xx                                 success; the message id is "sid"
///   20003 (authentication failed)       permanent + config_error
///   21606, 21659, 21601 (the sender is not a usable number of this account)
///                                       permanent + config_error
///   20429 (too many requests)           throttled
///   21611 (the sender's queue is full)  throttled
///   30001 (queue overflow)              retryable
///   21211, 21610, 21614, 21408 and any other code
///     (bad To, unsubscribed, not a mobile, region not enabled)
///                                       by the HTTP status: 429 throttled, 5xx retryable,
///                                       401 permanent + config_error, other 4xx permanent
///   no readable code                    classify_http (failure_class.hpp)
/// A 2xx answer without a readable sid is still a success: Twilio created the message, and the
/// caller names it by its own request id. A failure's detail is "twilio error N (HTTP S):
/// <message>", masked. `retry_after` is kept for retryable and throttled answers.
classified_answer classify_twilio_answer(long http_status, std::string_view body,
                                         std::optional<std::chrono::milliseconds> retry_after);

/// What a status callback reports.
struct twilio_status_update {
  std::string message_sid;
  provider_status status = provider_status::accepted;
  /// With undelivered: Twilio's status and ErrorCode, "failed (twilio error 30001)".
  std::string detail;
};

/// Reads a status callback's parameters: MessageSid and MessageStatus (queued, accepted and
/// scheduled are accepted; sending and sent are sent; delivered; read; undelivered, failed and
/// canceled are undelivered, with ErrorCode in the detail). nullopt without a plausible
/// MessageSid or with a status that is not an outbound message's (receiving, received, …).
std::optional<twilio_status_update> parse_status_callback(const name_values& params);

/// What GET …/Messages/{sid}.json answered, for a status query: found with the status mapped
/// as in parse_status_callback, the sid as message id and, when undelivered, "<status> (twilio
/// error N): <error_message>" as detail; not_found on 404; unknown otherwise.
status_answer parse_message_resource(long http_status, std::string_view body);

} // namespace herald::providers
