#pragma once

#include "tools/fake_exchange.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace herald::tools {

/// How the FCM fake answers sends, in order, before it goes back to answering normally. Each
/// error is answered as FCM does: a google.rpc.Status with the HTTP status FCM uses for it and,
/// where FCM names one, an FcmError errorCode in its details.
enum class fcm_fault {
  unregistered,           ///< 404 NOT_FOUND, errorCode UNREGISTERED
  invalid_argument,       ///< 400 INVALID_ARGUMENT, errorCode INVALID_ARGUMENT
  sender_id_mismatch,     ///< 403 PERMISSION_DENIED, errorCode SENDER_ID_MISMATCH
  third_party_auth_error, ///< 401 UNAUTHENTICATED, errorCode THIRD_PARTY_AUTH_ERROR (APNs key)
  quota_exceeded,         ///< 429 RESOURCE_EXHAUSTED, errorCode QUOTA_EXCEEDED, Retry-After
  unavailable,            ///< 503 UNAVAILABLE, errorCode UNAVAILABLE, Retry-After
  internal,               ///< 500 INTERNAL, errorCode INTERNAL
  unauthenticated,        ///< 401 UNAUTHENTICATED without an errorCode: the access token
  truncated,              ///< the success answer cut after half its body (the message is sent)
  garbage,                ///< bytes that are no HTTP answer (nothing is sent)
  dropped,                ///< the connection closes without an answer (nothing is sent)
  hang,                   ///< no answer at all (nothing is sent)
};

/// One message the fake accepted.
struct fcm_sent {
  std::string device_token;
  std::string title;
  std::string body;
  std::string herald_request_id; ///< data.herald_request_id, if the message carried one
  std::string name;              ///< projects/{project}/messages/{id}, as answered
  std::string access_token;      ///< the bearer token it came with
};

/// A local stand-in for Firebase Cloud Messaging's HTTP v1 API and Google's OAuth 2.0 token
/// endpoint, following their documented wire formats:
/// POST …/token (any path ending in /token: the service account's token_uri) with
/// grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT> answers
/// {"access_token","expires_in","token_type"}; the assertion must be an RS256 JWT whose kid,
/// iss and scope fit the service account, else 400 invalid_grant (the signature is for the
/// tests to verify: assertions() keeps every one);
/// POST /v1/projects/{project_id}/messages:send with "Authorization: Bearer <token>" answers
/// {"name": "projects/…/messages/…"}, 401 UNAUTHENTICATED for a token it never issued or
/// expired, 403 PERMISSION_DENIED for another project, 400 INVALID_ARGUMENT for a message it
/// cannot read, 404 UNREGISTERED for an unregistered device token. FCM does not deduplicate,
/// and neither does the fake. Thread-safe: tests script it while a server thread answers.
class fcm_fake {
public:
  struct options {
    std::string project_id = "herald-fake";
    std::string client_email = "herald-sender@herald-fake.iam.gserviceaccount.com";
    std::string private_key_id = "fake-key-id-1";
    std::int64_t token_lifetime_s = 3600;
    std::int64_t retry_after_s = 7; ///< Retry-After of QUOTA_EXCEEDED and UNAVAILABLE
  };

  explicit fcm_fake(options o);

  fake_reply handle(const fake_request& request);

  /// Every token issued so far stops working (401 UNAUTHENTICATED), as when one expires.
  void expire_tokens();
  /// The next sends answer these faults, in order.
  void script(std::vector<fcm_fault> faults);
  /// While on, the token endpoint refuses every assertion (400 invalid_grant), as Google does
  /// for a deleted key.
  void set_refusing_assertions(bool on);
  /// A device token the app no longer holds: 404 UNREGISTERED.
  void unregister(const std::string& device_token);

  std::size_t token_requests() const;
  std::size_t send_requests() const;
  std::vector<fcm_sent> sent() const;
  /// Every assertion the token endpoint received, in order.
  std::vector<std::string> assertions() const;

private:
  fake_reply token(const std::string& body);
  fake_reply send(const fake_request& request, const std::string& project);
  fake_reply accept(const fcm_sent& message);
  std::string assertion_problem(const std::string& assertion) const;

  options options_;
  mutable std::mutex mutex_;
  std::set<std::string> live_tokens_;
  std::deque<fcm_fault> faults_;
  bool refusing_assertions_ = false;
  std::set<std::string> unregistered_;
  std::vector<fcm_sent> sent_;
  std::vector<std::string> assertions_;
  std::size_t token_requests_ = 0;
  std::size_t send_requests_ = 0;
  std::uint64_t next_message_ = 1500415314455276ULL;
};

} // namespace herald::tools
