#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace herald::domain {

/// What one signed push was used for. WeChat's plaintext pushes sign only a timestamp and a
/// nonce, not the request: whoever saw one signed query string (a gateway's access log, the
/// URL handshake) could send any body under it while the timestamp is fresh. The store keeps one
/// seal per (channel, timestamp, nonce) and admits a push only if its seal is new or names the
/// same request (WeChat's own repeat of a push), so a signature carries one request, on every
/// node and across restarts.
struct push_seal {
  std::string channel;
  std::int64_t signed_at = 0; ///< the signed timestamp, unix seconds
  std::string nonce;
  std::string digest; ///< lower-case hex SHA-256 of the request's method and body
  /// Unix seconds after which a push with this timestamp is refused as stale on any node whose
  /// clock is within the window of this one's: the seal may be dropped then.
  std::int64_t kept_until = 0;
};

/// The seal of a push signed with (`signed_at`, `nonce`) to `channel`, whose timestamps are
/// accepted within `window` of the receiver's clock. The method is sealed with the body, so the
/// GET handshake's query never carries a POST.
push_seal seal_push(std::string channel, std::int64_t signed_at, std::string nonce,
                    std::string_view method, std::string_view body, std::chrono::seconds window);

} // namespace herald::domain
