#include "domain/circuit_breaker.hpp"

namespace herald::domain {

circuit_breaker::circuit_breaker(std::uint32_t failure_threshold,
                                 std::chrono::milliseconds cool_down)
    : failure_threshold_(failure_threshold), cool_down_(cool_down) {}

bool circuit_breaker::allow(timestamp now) {
  switch (state_) {
  case state::closed:
    return true;
  case state::open:
    if (now - opened_at_ < cool_down_)
      return false;
    state_ = state::half_open;
    probe_in_flight_ = true;
    return true;
  case state::half_open:
    if (probe_in_flight_)
      return false;
    probe_in_flight_ = true;
    return true;
  }
  return false;
}

bool circuit_breaker::is_open(timestamp now) const {
  return state_ == state::open && now - opened_at_ < cool_down_;
}

void circuit_breaker::on_success() {
  state_ = state::closed;
  consecutive_failures_ = 0;
  probe_in_flight_ = false;
}

void circuit_breaker::on_failure(timestamp now) {
  probe_in_flight_ = false;
  ++consecutive_failures_;
  if (state_ == state::half_open || consecutive_failures_ >= failure_threshold_) {
    state_ = state::open;
    opened_at_ = now;
  }
}

std::string_view to_string(circuit_breaker::state value) {
  switch (value) {
  case circuit_breaker::state::closed:
    return "closed";
  case circuit_breaker::state::open:
    return "open";
  case circuit_breaker::state::half_open:
    return "half_open";
  }
  return "closed";
}

} // namespace herald::domain
