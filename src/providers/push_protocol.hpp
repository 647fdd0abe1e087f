#pragma once

#include "providers/answer_class.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace herald::providers {

/// Mobile push, the wire formats only (pure): Firebase Cloud Messaging's HTTP v1 API and Apple
/// Push Notification service's HTTP/2 provider API. Sources: firebase.google.com "REST
/// Resource: projects.messages" (send), "ErrorCode" (FcmError codes with their HTTP statuses)
/// and "FCM error codes" (the google.rpc.Status error body); developer.apple.com "Sending
/// notification requests to APNs", "Handling notification responses from APNs" (statuses and
/// reasons) and "Generating a remote notification" (the aps dictionary); Google's "Using OAuth
/// 2.0 for Server to Server Applications" (the token answer).

/// The body of POST v1/projects/{project}/messages:send:
/// {"message": {"token", "notification": {"title", "body"}, "data"?: {"<key>": "<value>"}}}.
/// FCM's data values are strings; a key given twice keeps its last value.
std::string fcm_send_body(std::string_view token, std::string_view title, std::string_view body,
                          const name_values& data = {});

/// Classes FCM's answer to a send. Success is 200 with {"name": "projects/…/messages/…"}; an
/// error is a google.rpc.Status, {"error": {"code", "message", "status", "details": [{"@type":
/// "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "…"}]}}. The FcmError's
/// errorCode counts first, error.status otherwise:
///   2xx                                  success; the message id is "name"
///   UNREGISTERED (404), INVALID_ARGUMENT (400)
///                                        permanent: this token or message
///   SENDER_ID_MISMATCH (403), THIRD_PARTY_AUTH_ERROR (401), PERMISSION_DENIED (403)
///                                        permanent + config_error
///   UNAUTHENTICATED (401)                retryable + token_invalid: the OAuth token
///   QUOTA_EXCEEDED (429)                 throttled
///   UNAVAILABLE (503), INTERNAL (500)    retryable
///   any other code                       by the HTTP status (classify_http)
///   no readable error                    classify_http (failure_class.hpp)
/// A 2xx answer without a readable name is still a success (the caller names the message by its
/// own request id). A failure's detail is "fcm <code> (HTTP S): <message>", masked.
/// `retry_after` (FCM asks to honour Retry-After) is kept for retryable and throttled answers.
classified_answer classify_fcm_answer(long http_status, std::string_view body,
                                      std::optional<std::chrono::milliseconds> retry_after);

/// What Google's OAuth 2.0 token endpoint answered: {"access_token", "expires_in",
/// "token_type"}, or an error ({"error", "error_description"}: "oauth error <error>: …").
token_answer parse_oauth_token_answer(std::string_view body);

/// The APNs payload of an alert: {"aps": {"alert": {"title", "body"}}}.
std::string apns_payload(std::string_view title, std::string_view body);

/// Classes APNs's answer to a send: its HTTP/2 status, with {"reason": "…"} (and "timestamp"
/// for an inactive token) in the body of an error:
///   2xx                                  success; the message id is `apns_id`, the apns-id
///                                        header of the answer
///   BadDeviceToken, DeviceTokenNotForTopic (400), Unregistered, ExpiredToken (410),
///   PayloadTooLarge (413)                permanent: this device token or payload
///   BadTopic, TopicDisallowed, MissingTopic (400), BadCertificate, BadCertificateEnvironment,
///   Forbidden, MissingProviderToken (403)
///                                        permanent + config_error
///   ExpiredProviderToken, InvalidProviderToken (403)
///                                        retryable + token_invalid: sign a new JWT
///   TooManyProviderTokenUpdates (429)    throttled: the JWT changed too often
///   TooManyRequests (429)                retryable: too many requests for one device token,
///                                        not a reason to pause the channel
///   IdleTimeout (400), InternalServerError (500), ServiceUnavailable, Shutdown (503)
///                                        retryable
///   any other reason                     by the HTTP status (classify_http)
///   no readable reason                   classify_http (failure_class.hpp)
/// A failure's detail is "apns <reason> (HTTP S)", and for Unregistered with a timestamp
/// "…: inactive since <RFC 3339>". `retry_after` is kept for retryable and throttled answers.
classified_answer classify_apns_answer(long http_status, std::string_view body,
                                       std::optional<std::chrono::milliseconds> retry_after,
                                       std::string_view apns_id);

} // namespace herald::providers
