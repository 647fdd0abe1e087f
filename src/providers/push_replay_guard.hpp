#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace herald::providers {

/// Refuses a signed push whose signature was seen before with another body. WeChat's plaintext
/// pushes sign only the timestamp and nonce, not the body: whoever sees one signed query string
/// (a gateway's access log) could post any XML under it while the timestamp is fresh. WeChat
/// itself sends the same push again under the same signature, with the same body, so a repeat
/// of the pair is accepted and a different body is not. Remembers pairs for the timestamp
/// window, at most `capacity` of them (the oldest go first). Thread-safe.
class push_replay_guard {
public:
  push_replay_guard(std::chrono::seconds window, std::size_t capacity = 100000);

  /// Whether a push signed with (`timestamp`, `nonce`) may carry `body`; remembers it. `now`
  /// and `timestamp` are unix seconds.
  bool admit(std::int64_t timestamp, std::string_view nonce, std::string_view body,
             std::int64_t now);

private:
  std::chrono::seconds window_;
  std::size_t capacity_;
  std::mutex mutex_;
  std::map<std::pair<std::int64_t, std::string>, std::string> seen_; ///< -> SHA-256 of the body
};

} // namespace herald::providers
