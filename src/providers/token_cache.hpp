#pragma once

#include "providers/provider.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

namespace herald::providers {

/// An access token a provider issued, and how long it said it lives.
struct issued_token {
  std::string value;
  std::chrono::seconds lifetime{0};
};

/// A token, or why none could be had (a classified failure: retryable when the token endpoint
/// was unreachable, permanent when it refused the credentials).
using token_or_failure = std::variant<std::string, provider_result>;
using token_callback = std::function<void(token_or_failure)>;

/// One provider access token shared by every send that needs it (WeChat's access_token per
/// appid, FCM's OAuth2 token per service account, APNs' provider JWT per key).
///
/// A valid token is handed out at once. When there is none — first use, expiry, or a
/// provider saying it is no longer valid — exactly one fetch runs while every caller waits on
/// it, so a thousand concurrent sends with an expired token cause one refresh, never a
/// thousand (providers limit token requests per day, and each new WeChat token invalidates the
/// previous one for every other holder). Thread-safe; callbacks run outside the lock, on the
/// thread that completed the fetch or inline in get().
class token_cache {
public:
  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;
  /// Starts one fetch; must call its callback exactly once, on any thread.
  using fetcher =
      std::function<void(std::function<void(std::variant<issued_token, provider_result>)>)>;

  /// A token is used until `margin` before the end of its lifetime (WeChat advises refreshing
  /// well before expires_in; 300 s by default).
  token_cache(fetcher fetch, std::chrono::seconds margin = std::chrono::seconds{300},
              clock_fn clock = std::chrono::steady_clock::now);

  /// Calls `done` with a valid token, or with why there is none.
  void get(token_callback done);

  /// The provider refused `stale` as expired or invalid: the next get() fetches a new one.
  /// A token other than the current one changes nothing, so many sends refused with the same
  /// old token cause one refresh.
  void invalidate(const std::string& stale);

  /// Fetches started so far (herald_provider_token_refreshes_total).
  std::uint64_t fetches() const;

private:
  void on_fetched(std::variant<issued_token, provider_result> outcome);

  fetcher fetch_;
  std::chrono::seconds margin_;
  clock_fn clock_;

  mutable std::mutex mutex_;
  std::string token_;                                 ///< guarded; empty: none
  std::chrono::steady_clock::time_point valid_until_; ///< guarded
  bool fetching_ = false;                             ///< guarded
  std::vector<token_callback> waiting_;               ///< guarded
  std::uint64_t fetches_ = 0;                         ///< guarded
};

} // namespace herald::providers
