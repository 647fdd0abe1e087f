#pragma once

#include "domain/time.hpp"

namespace herald::domain {

/// The wall clock moved so that it showed `start` when it was made, then running at the real
/// pace (`herald serve --test-clock`): lets a test see herald at a chosen time of day, e.g.
/// 23:00 in a user's zone, and a restart with a later start drive time forward.
class shifted_clock final : public clock {
public:
  explicit shifted_clock(timestamp start) : shift_(start - std::chrono::system_clock::now()) {}
  timestamp now() const override { return std::chrono::system_clock::now() + shift_; }

private:
  timestamp::duration shift_;
};

} // namespace herald::domain
