#include "domain/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace herald::domain {

std::optional<std::chrono::milliseconds> retry_policy::next_delay(std::uint32_t attempts_made,
                                                                  double unit_random) const {
  if (attempts_made >= max_attempts || schedule.empty())
    return std::nullopt;
  if (attempts_made == 0)
    return std::chrono::milliseconds{0}; // nothing was tried yet: go now
  const std::size_t index = std::min<std::size_t>(attempts_made - 1, schedule.size() - 1);
  const double spread = std::clamp(jitter, 0.0, 1.0);
  const double r = std::clamp(unit_random, 0.0, 1.0);
  const double factor = 1.0 + spread * (2.0 * r - 1.0);
  const auto base = static_cast<double>(schedule[index].count());
  // Clamped in double first: llround of a value beyond int64 has no defined result.
  const double cap = static_cast<double>(max_retry_delay.count());
  return std::chrono::milliseconds{std::llround(std::clamp(base * factor, 0.0, cap))};
}

retry_policy default_retry_policy() {
  using namespace std::chrono_literals;
  retry_policy policy;
  policy.schedule = {1min, 5min, 30min, 2h, 6h};
  policy.jitter = 0.2;
  policy.max_attempts = 6;
  return policy;
}

} // namespace herald::domain
