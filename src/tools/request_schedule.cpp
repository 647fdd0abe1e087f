#include "tools/request_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace herald::tools {

open_loop_schedule::open_loop_schedule(double per_second) : per_second_(per_second) {}

std::chrono::nanoseconds open_loop_schedule::due(std::size_t request) const {
  // long double keeps whole nanoseconds exact for 10^7 requests over days.
  auto ns = static_cast<long double>(request) * 1e9L / static_cast<long double>(per_second_);
  return std::chrono::nanoseconds(std::llround(ns));
}

std::vector<std::pair<std::size_t, std::size_t>> request_groups(std::size_t count,
                                                                std::size_t size) {
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  size = std::max<std::size_t>(size, 1);
  groups.reserve((count + size - 1) / size);
  for (std::size_t first = 0; first < count; first += size)
    groups.emplace_back(first, std::min(count, first + size));
  return groups;
}

} // namespace herald::tools
