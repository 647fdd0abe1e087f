#pragma once

#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

namespace herald::tools {

/// The open loop's timetable: request i is due i / rate seconds after the start, whatever
/// became of the requests before it. Each due time is computed from i, so nothing drifts.
class open_loop_schedule {
public:
  /// `per_second` > 0.
  explicit open_loop_schedule(double per_second);

  double per_second() const { return per_second_; }

  /// When request `request` is due, counted from the start.
  std::chrono::nanoseconds due(std::size_t request) const;

  /// Whether `request`, taken up by a connection `taken` after the start, starts late: a free
  /// connection takes the next request at once and waits for its time, so one taken after its
  /// time means no connection was free when it was due.
  bool late(std::size_t request, std::chrono::nanoseconds taken) const {
    return taken > due(request);
  }

private:
  double per_second_;
};

/// [first, end) ranges cutting [0, count) into consecutive groups of `size` (the last may be
/// smaller): the requests of a run, one event each or a batch of `size`. `size` >= 1.
std::vector<std::pair<std::size_t, std::size_t>> request_groups(std::size_t count,
                                                                std::size_t size);

} // namespace herald::tools
