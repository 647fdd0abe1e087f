#include "domain/quiet_hours.hpp"

namespace herald::domain {

namespace {

// The end of the window as an instant after `now`: when the end's wall-clock time comes twice
// (a fall-back) and `now` is already past its first pass, the second.
std::optional<timestamp> end_after(timestamp now, const time_zone& zone, local_seconds end) {
  for (auto which : {time_zone::occurrence::earlier, time_zone::occurrence::later})
    if (auto at = zone.from_local(end, which); at > now)
      return at;
  return std::nullopt; // the wall clock went back past the whole window: not quiet
}

} // namespace

std::optional<timestamp> quiet_until(timestamp now, const time_zone& zone,
                                     const quiet_hours& window) {
  constexpr std::int64_t day = 86'400;
  const std::int64_t start = std::chrono::seconds{window.start}.count();
  const std::int64_t end = std::chrono::seconds{window.end}.count();
  if (start == end)
    return std::nullopt;
  const local_seconds local = zone.to_local(now);
  const local_seconds midnight = local - ((local % day) + day) % day;
  const std::int64_t time_of_day = local - midnight;
  if (start < end) // within one day, e.g. 12:00-14:00
    return time_of_day >= start && time_of_day < end ? end_after(now, zone, midnight + end)
                                                     : std::nullopt;
  if (time_of_day >= start) // evening part: it ends tomorrow
    return end_after(now, zone, midnight + day + end);
  if (time_of_day < end) // morning part
    return end_after(now, zone, midnight + end);
  return std::nullopt;
}

} // namespace herald::domain
