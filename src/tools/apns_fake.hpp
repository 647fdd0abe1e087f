#pragma once

#include "tools/fake_exchange.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace herald::tools {

/// How the APNs fake answers sends, in order, before it goes back to answering normally. Each
/// error is answered as APNs does: its HTTP status and {"reason": "…"}.
enum class apns_fault {
  bad_device_token,                ///< 400 BadDeviceToken
  unregistered,                    ///< 410 Unregistered, with the timestamp since when
  topic_disallowed,                ///< 400 TopicDisallowed
  expired_provider_token,          ///< 403 ExpiredProviderToken
  invalid_provider_token,          ///< 403 InvalidProviderToken
  payload_too_large,               ///< 413 PayloadTooLarge
  too_many_requests,               ///< 429 TooManyRequests (for one device token)
  too_many_provider_token_updates, ///< 429 TooManyProviderTokenUpdates, Retry-After
  internal_server_error,           ///< 500 InternalServerError
  service_unavailable,             ///< 503 ServiceUnavailable, Retry-After
  truncated,                       ///< 400 BadDeviceToken cut off after half its body
  garbage,                         ///< bytes that are no HTTP/2 instead of an answer
  dropped,                         ///< the stream is reset without an answer
  hang,                            ///< no answer at all
};

/// One notification the fake accepted.
struct apns_sent {
  std::string device_token;
  std::string apns_id; ///< as answered (the request's, or one the fake made)
  std::string payload;
  std::string protocol; ///< "HTTP/2", always: the h2c server speaks nothing else
  std::string provider_token;
  std::vector<std::pair<std::string, std::string>> headers; ///< as received
};

/// A local stand-in for the APNs provider API, following "Sending notification requests to
/// APNs" and "Establishing a token-based connection to APNs": POST /3/device/{device token}
/// over HTTP/2 (serve it with h2c_server) with authorization: bearer <provider token>, answered
/// 200 with the apns-id header. The provider token must be an ES256 JWT with the configured
/// kid and iss and an iat within the last hour (else 403 InvalidProviderToken or
/// ExpiredProviderToken; none: MissingProviderToken); a new token less than 20 minutes after
/// the last new one is 429 TooManyProviderTokenUpdates. The signature is for the tests to
/// verify (provider_tokens() keeps every one). apns-topic must be the configured one
/// (MissingTopic, TopicDisallowed), apns-push-type known (InvalidPushType), apns-id a UUID
/// (BadMessageId), apns-collapse-id at most 64 bytes (BadCollapseId), apns-priority 5 or 10
/// (BadPriority), the payload a JSON object of at most 4096 bytes (PayloadEmpty,
/// PayloadTooLarge), the device token hexadecimal (BadDeviceToken). Like APNs it does not
/// deduplicate. Thread-safe: tests script it while a server thread answers.
class apns_fake {
public:
  struct options {
    std::string team_id = "FAKETEAM01";
    std::string key_id = "FAKEKEY001";
    std::string topic = "org.herald.fake";
    /// The fake's clock, in Unix seconds; empty: the system's.
    std::function<std::int64_t()> unix_now;
    std::int64_t retry_after_s = 5; ///< Retry-After of 429 and 503 answers
  };

  explicit apns_fake(options o);

  fake_reply handle(const fake_request& request);

  /// Every provider token used so far is expired (403 ExpiredProviderToken), as when an hour
  /// has passed by APNs's clock.
  void expire_tokens();
  /// The next sends answer these faults, in order.
  void script(std::vector<apns_fault> faults);
  /// A device token APNs knows inactive since `since_unix_ms`: 410 Unregistered.
  void unregister(const std::string& device_token, std::int64_t since_unix_ms);

  std::size_t send_requests() const;
  std::vector<apns_sent> sent() const;
  /// Every distinct provider token, in the order first used.
  std::vector<std::string> provider_tokens() const;

private:
  std::int64_t now() const;
  std::string token_refusal(const std::string& token, unsigned& status);
  fake_reply scripted(apns_fault fault);

  options options_;
  mutable std::mutex mutex_;
  std::vector<std::string> tokens_in_order_;
  std::map<std::string, std::int64_t> first_used_; ///< provider token -> Unix seconds
  std::set<std::string> expired_tokens_;
  std::deque<apns_fault> faults_;
  std::map<std::string, std::int64_t> unregistered_;
  std::vector<apns_sent> sent_;
  std::size_t send_requests_ = 0;
  std::uint64_t next_id_ = 1;
};

} // namespace herald::tools
