#pragma once

#include "app/config.hpp"

namespace herald::app {

/// Runs `herald serve` until SIGTERM or SIGINT, then drains: stops accepting, lets requests
/// in flight finish, lets provider calls in flight finish and be recorded, and stops the
/// actors. Returns the process exit code (0 after a clean drain, 1 when it cannot start).
/// SIGTERM and SIGINT must be blocked in every thread before it is called (see main).
int serve(const config& cfg);

/// Runs `herald migrate`; returns the exit code.
int migrate(const config& cfg);

} // namespace herald::app
