#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace herald::domain {

/// The longest wait before a retry, jitter included. Config refuses longer steps; next_delay()
/// caps at it too, so no schedule can make `now + delay` overflow the clock's range.
inline constexpr std::chrono::milliseconds max_retry_delay = std::chrono::hours{24 * 7};

/// When to try again after a retryable failure.
struct retry_policy {
  std::vector<std::chrono::milliseconds> schedule; ///< delay before retry 1, 2, ...; last repeats
  double jitter = 0.2;                             ///< +-20% spread so retries do not stampede
  std::uint32_t max_attempts = 6;                  ///< provider calls in all, the first included

  /// Delay before the next call after `attempts_made` calls, or nullopt when exhausted.
  /// `unit_random` in [0, 1) picks the jitter, so callers (and tests) own the randomness.
  /// Never more than max_retry_delay.
  std::optional<std::chrono::milliseconds> next_delay(std::uint32_t attempts_made,
                                                      double unit_random) const;
};

/// The field's usual schedule: 1m, 5m, 30m, 2h, 6h.
retry_policy default_retry_policy();

} // namespace herald::domain
