#pragma once

#include "domain/time.hpp"
#include "domain/time_zone.hpp"

#include <chrono>
#include <optional>

namespace herald::domain {

/// A daily window of the user's wall clock in which some messages wait, e.g. 22:00–08:00.
/// `start` and `end` are times of day; a window with start after end spans midnight, one with
/// start equal to end is empty.
struct quiet_hours {
  std::chrono::minutes start{22 * 60};
  std::chrono::minutes end{8 * 60};
};

/// When the window that `now` falls in ends, as an instant (the wall clock of `zone` showing
/// `end`, on the right day, through daylight-saving changes); nothing when `now` is outside
/// the window. The start is inside the window, the end is not.
std::optional<timestamp> quiet_until(timestamp now, const time_zone& zone,
                                     const quiet_hours& window);

} // namespace herald::domain
