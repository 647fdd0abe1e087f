#pragma once

#include "domain/time.hpp"

#include <chrono>
#include <cstdint>
#include <string_view>

namespace herald::domain {

/// Guards a channel against a provider that is down: after `failure_threshold` consecutive
/// failures it opens (new tasks fail over instead of waiting); after `cool_down` it lets one
/// probe through (half-open); the probe's success closes it, its failure opens it again.
/// Time is passed in.
class circuit_breaker {
public:
  enum class state { closed, open, half_open };

  circuit_breaker(std::uint32_t failure_threshold, std::chrono::milliseconds cool_down);

  /// Whether a call may start now. In half-open state only one probe at a time may.
  bool allow(timestamp now);

  /// Whether new tasks should fail over rather than wait (open, and not yet probing).
  bool is_open(timestamp now) const;

  /// The probe allowed in half-open state never reached the provider (e.g. another sender
  /// had the task): let the next task probe instead.
  void abandon_probe() { probe_in_flight_ = false; }

  void on_success();
  void on_failure(timestamp now);

  state current() const { return state_; }

private:
  std::uint32_t failure_threshold_;
  std::chrono::milliseconds cool_down_;
  state state_ = state::closed;
  std::uint32_t consecutive_failures_ = 0;
  timestamp opened_at_{};
  bool probe_in_flight_ = false;
};

/// "closed" | "open" | "half_open".
std::string_view to_string(circuit_breaker::state value);

} // namespace herald::domain
