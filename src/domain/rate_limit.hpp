#pragma once

#include "domain/time.hpp"

#include <chrono>

namespace herald::domain {

/// Classic token bucket: `rate_per_sec` tokens refill continuously up to `burst`.
/// Time is passed in, never read, so tests drive it.
class token_bucket {
public:
  token_bucket(double rate_per_sec, double burst, timestamp now);

  /// Takes one token if one is available at `now`.
  bool try_take(timestamp now);

  /// How long until one token is available (zero if one is available now).
  std::chrono::microseconds wait_time(timestamp now);

  double available(timestamp now);

  /// New limits from `now` on (a cluster's members changed): tokens earned so far are kept,
  /// up to the new burst, so a change never hands out a fresh burst.
  void set_limits(double rate_per_sec, double burst, timestamp now);

private:
  void refill(timestamp now);

  double rate_per_sec_;
  double burst_;
  double tokens_;
  timestamp last_refill_;
};

} // namespace herald::domain
