#pragma once

#include <csignal>

namespace herald::app {

/// Blocks SIGTERM and SIGINT in the calling thread — call it before any thread starts, so every
/// thread inherits the mask and only wait_for_stop_signal() sees them — and restores their
/// default disposition (an ignored signal is discarded before sigwait could see it; a parent
/// such as a shell starting us in the background may have left one ignored).
void block_stop_signals();

/// Waits for SIGTERM or SIGINT (blocked by block_stop_signals); returns the signal number.
int wait_for_stop_signal();

} // namespace herald::app
