#pragma once

#include <caf/scheduled_actor.hpp>

namespace herald::actors {

/// Replaces CAF's default handlers (which print to stdout) with ones that log through
/// spdlog: unexpected messages, unhandled errors and exceptions escaping a handler. Every
/// herald actor calls it first thing in its behavior function.
void install_logging_handlers(caf::scheduled_actor* self);

} // namespace herald::actors
